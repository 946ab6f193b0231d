//! Builds the C `long double` helpers of INCRBYFLOAT / HINCRBYFLOAT
//! (`csrc/long_double.c`, see `src/long_double.rs`).
fn main() {
    println!("cargo:rerun-if-changed=csrc/long_double.c");
    cc::Build::new()
        .file("csrc/long_double.c")
        .warnings(true)
        .compile("augur_long_double");
}
