//! The tenant registry: tenants are ACL users (Redis's syntax), each with its own
//! keyspace in the store (a [`TenantId`] slot) and its own settings (memory limits,
//! miss penalty).
//!
//! Why users: an application already authenticates to a shared Redis with its own
//! user (`AUTH user pass`, `HELLO 3 AUTH user pass`), so making the user the unit of
//! isolation needs no change in the application. The `default` user is the `default`
//! tenant: unauthenticated connections land there when it needs no password, and
//! `requirepass` is its password, as in Redis.
//!
//! ACL rules understood: `on`, `off`, `>password`, `<password`, `#<sha256>`,
//! `!<sha256>`, `nopass`, `resetpass`, `reset`, and the all-permissive key/channel/command
//! rules (`~*`, `allkeys`, `&*`, `allchannels`, `+@all`, `allcommands`). Narrower key
//! patterns or command permissions are refused with an error saying so: Augur isolates
//! tenants by keyspace, and does not (yet) restrict what a tenant may run.

use augur_store::{Store, TenantId, MAX_TENANTS};
use parking_lot::RwLock;
use sha2::{Digest, Sha256};
use std::collections::HashMap;

/// Per-tenant settings (`TENANT SET` and `tenant` config lines).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TenantSettings {
    /// Hard limit in bytes (0 = none): `static` mode's operator limit, and the DP's
    /// upper bound in `kredis` mode.
    pub maxmemory: u64,
    /// Memory the kRedis tuner always gives this tenant.
    pub min_memory: u64,
    /// Miss penalty in microseconds to assume when none is measured; `None` = the
    /// server default (`tenant-default-miss-penalty`).
    pub miss_penalty_us: Option<f64>,
    /// Profiler sampling rate for this tenant; `None` = `tenant-sample-rate`.
    pub sample_rate: Option<f64>,
}

/// The parameters of `TENANT SET` / `TENANT GET`, in listing order.
pub const TENANT_PARAMS: &[&str] = &["maxmemory", "min-memory", "miss-penalty", "sample-rate"];

impl TenantSettings {
    pub fn apply(&mut self, name: &str, value: &str) -> Result<(), String> {
        match name.to_ascii_lowercase().as_str() {
            "maxmemory" => {
                self.maxmemory =
                    crate::config::parse_memory(value).ok_or("argument must be a memory value")?
            }
            "min-memory" => {
                self.min_memory =
                    crate::config::parse_memory(value).ok_or("argument must be a memory value")?
            }
            "miss-penalty" => {
                self.miss_penalty_us = if value.eq_ignore_ascii_case("auto") || value.is_empty() {
                    None
                } else {
                    Some(
                        crate::config::parse_duration_us(value)
                            .ok_or("argument must be a duration such as 200us, 2ms or 1s")?,
                    )
                }
            }
            "sample-rate" => {
                self.sample_rate = if value.eq_ignore_ascii_case("default") || value.is_empty() {
                    None
                } else {
                    let r: f64 = value
                        .parse()
                        .map_err(|_| "argument couldn't be parsed into a number".to_string())?;
                    if !(0.0..=1.0).contains(&r) {
                        return Err("argument must be between 0 and 1 inclusive".into());
                    }
                    Some(r)
                }
            }
            _ => return Err(format!("Unknown tenant parameter '{name}'")),
        }
        Ok(())
    }

    pub fn get(&self, name: &str) -> Option<String> {
        Some(match name {
            "maxmemory" => self.maxmemory.to_string(),
            "min-memory" => self.min_memory.to_string(),
            "miss-penalty" => self
                .miss_penalty_us
                .map_or("auto".to_string(), |us| format!("{us}us")),
            "sample-rate" => self
                .sample_rate
                .map_or("default".to_string(), |r| r.to_string()),
            _ => return None,
        })
    }
}

/// One ACL user, which is one tenant.
#[derive(Debug, Clone, PartialEq)]
pub struct User {
    pub name: String,
    pub id: TenantId,
    pub enabled: bool,
    pub nopass: bool,
    /// SHA-256 of each password, lowercase hex (what ACL GETUSER and ACL LIST show).
    pub passwords: Vec<String>,
    pub settings: TenantSettings,
}

impl User {
    fn new(name: &str, id: TenantId) -> User {
        User {
            name: name.to_string(),
            id,
            enabled: false,
            nopass: false,
            passwords: Vec::new(),
            settings: TenantSettings::default(),
        }
    }

    pub fn password_ok(&self, pass: &[u8]) -> bool {
        self.enabled && (self.nopass || self.passwords.contains(&sha256_hex(pass)))
    }

    /// The rule string of ACL LIST (`user NAME on #hash ~* &* +@all`).
    pub fn describe(&self) -> String {
        let mut s = format!(
            "user {} {}",
            self.name,
            if self.enabled { "on" } else { "off" }
        );
        if self.nopass {
            s.push_str(" nopass");
        }
        for p in &self.passwords {
            s.push_str(" #");
            s.push_str(p);
        }
        s.push_str(" ~* &* +@all");
        s
    }

    /// Applies one ACL rule (Redis `ACLSetUser` syntax, the subset described in the
    /// module docs). Errors use Redis's wording where it has one.
    pub fn apply_rule(&mut self, rule: &[u8]) -> Result<(), String> {
        let text = String::from_utf8_lossy(rule);
        let lower = text.to_ascii_lowercase();
        match lower.as_str() {
            "on" => self.enabled = true,
            "off" => self.enabled = false,
            "nopass" => {
                self.nopass = true;
                self.passwords.clear();
            }
            "resetpass" => {
                self.nopass = false;
                self.passwords.clear();
            }
            "reset" => {
                self.enabled = false;
                self.nopass = false;
                self.passwords.clear();
            }
            "~*" | "allkeys" | "&*" | "allchannels" | "+@all" | "allcommands" | "resetkeys"
            | "resetchannels" | "%rw~*" => {}
            _ => match rule.first() {
                Some(b'>') => {
                    let h = sha256_hex(&rule[1..]);
                    if !self.passwords.contains(&h) {
                        self.passwords.push(h);
                    }
                    self.nopass = false;
                }
                Some(b'<') => {
                    let h = sha256_hex(&rule[1..]);
                    self.passwords.retain(|p| *p != h);
                }
                Some(b'#') | Some(b'!') => {
                    let h = text[1..].to_ascii_lowercase();
                    if h.len() != 64 || !h.bytes().all(|b| b.is_ascii_hexdigit()) {
                        return Err("The password hash must be exactly 64 characters and contain only lowercase hexadecimal characters".into());
                    }
                    if rule[0] == b'#' {
                        if !self.passwords.contains(&h) {
                            self.passwords.push(h);
                        }
                        self.nopass = false;
                    } else {
                        self.passwords.retain(|p| *p != h);
                    }
                }
                Some(b'~') | Some(b'%') | Some(b'&') | Some(b'+') | Some(b'-') => {
                    return Err(format!(
                        "Augur isolates tenants by keyspace and does not support narrower key, channel or command permissions ('{text}')"
                    ))
                }
                _ => return Err("Syntax error".into()),
            },
        }
        Ok(())
    }
}

pub fn sha256_hex(data: &[u8]) -> String {
    let d = Sha256::digest(data);
    let mut s = String::with_capacity(64);
    for b in d {
        use std::fmt::Write;
        let _ = write!(s, "{b:02x}");
    }
    s
}

/// Why a registry change was refused.
#[derive(Debug, Clone, PartialEq)]
pub enum TenantError {
    NoSuchUser,
    TooMany,
    Rule(String),
    Invalid(String),
}

/// All users/tenants, by name and by slot.
pub struct Registry {
    inner: RwLock<Inner>,
}

struct Inner {
    by_name: HashMap<String, TenantId>,
    slots: Vec<Option<User>>,
}

impl Registry {
    /// A registry with the `default` user (slot 0): `on nopass`, or with `requirepass`.
    pub fn new(requirepass: Option<&str>) -> Registry {
        let mut default = User::new("default", 0);
        default.enabled = true;
        match requirepass {
            Some(p) => default.passwords.push(sha256_hex(p.as_bytes())),
            None => default.nopass = true,
        }
        let mut by_name = HashMap::new();
        by_name.insert("default".to_string(), 0);
        Registry {
            inner: RwLock::new(Inner {
                by_name,
                slots: vec![Some(default)],
            }),
        }
    }

    pub fn get(&self, name: &str) -> Option<User> {
        let g = self.inner.read();
        let id = *g.by_name.get(name)?;
        g.slots[id as usize].clone()
    }

    pub fn by_id(&self, id: TenantId) -> Option<User> {
        self.inner.read().slots.get(id as usize).cloned().flatten()
    }

    /// Every user, by slot order.
    pub fn users(&self) -> Vec<User> {
        self.inner.read().slots.iter().flatten().cloned().collect()
    }

    /// ACL SETUSER: creates the user (a new tenant, a fresh keyspace) if needed and
    /// applies the rules in order; nothing changes if any rule is invalid.
    pub fn set_user(&self, name: &str, rules: &[&[u8]]) -> Result<User, TenantError> {
        let mut g = self.inner.write();
        let existing = g.by_name.get(name).copied();
        let mut user = match existing {
            Some(id) => g.slots[id as usize]
                .clone()
                .ok_or(TenantError::NoSuchUser)?,
            None => {
                let free = g
                    .slots
                    .iter()
                    .position(Option::is_none)
                    .unwrap_or(g.slots.len());
                if free >= MAX_TENANTS {
                    return Err(TenantError::TooMany);
                }
                User::new(name, free as TenantId)
            }
        };
        for r in rules {
            user.apply_rule(r).map_err(|e| {
                TenantError::Rule(format!(
                    "Error in ACL SETUSER modifier '{}': {e}",
                    String::from_utf8_lossy(r)
                ))
            })?;
        }
        let id = user.id as usize;
        if id >= g.slots.len() {
            g.slots.resize(id + 1, None);
        }
        g.slots[id] = Some(user.clone());
        g.by_name.insert(name.to_string(), user.id);
        Ok(user)
    }

    /// ACL DELUSER: removes the user; the caller drops its keyspace and connections.
    /// The default user cannot be removed.
    pub fn delete_user(&self, name: &str) -> Option<User> {
        if name == "default" {
            return None;
        }
        let mut g = self.inner.write();
        let id = g.by_name.remove(name)?;
        g.slots[id as usize].take()
    }

    /// Applies `TENANT SET` parameters atomically (all or none); then checks that the
    /// tenants' minimums still fit in `maxmemory` (0 = unlimited).
    pub fn set_settings(
        &self,
        name: &str,
        pairs: &[(String, String)],
        maxmemory: u64,
    ) -> Result<User, TenantError> {
        let mut g = self.inner.write();
        let id = *g.by_name.get(name).ok_or(TenantError::NoSuchUser)?;
        let mut user = g.slots[id as usize]
            .clone()
            .ok_or(TenantError::NoSuchUser)?;
        for (k, v) in pairs {
            user.settings.apply(k, v).map_err(TenantError::Invalid)?;
        }
        if user.settings.maxmemory != 0 && user.settings.min_memory > user.settings.maxmemory {
            return Err(TenantError::Invalid(
                "min-memory is above the tenant's maxmemory".into(),
            ));
        }
        let others: u64 = g
            .slots
            .iter()
            .flatten()
            .filter(|u| u.id != id)
            .map(|u| u.settings.min_memory)
            .sum();
        if maxmemory > 0 && others + user.settings.min_memory > maxmemory {
            return Err(TenantError::Invalid(format!(
                "the tenants' min-memory would add up to {} bytes, above maxmemory ({maxmemory})",
                others + user.settings.min_memory
            )));
        }
        g.slots[id as usize] = Some(user.clone());
        Ok(user)
    }

    /// Sum of every tenant's min-memory.
    pub fn min_memory_sum(&self) -> u64 {
        self.inner
            .read()
            .slots
            .iter()
            .flatten()
            .map(|u| u.settings.min_memory)
            .sum()
    }

    /// Pushes the operator's limits to the store for `static` mode and for caps:
    /// a tenant's cap is its `maxmemory`; its target is that cap, or for uncapped tenants
    /// an equal share of what the capped ones leave of `maxmemory`. In `kredis` mode the
    /// tuner overwrites targets and K every interval.
    pub fn install_static_limits(&self, store: &Store, maxmemory: u64, keep_targets: bool) {
        let users = self.users();
        let capped: u64 = users.iter().map(|u| u.settings.maxmemory).sum();
        let uncapped = users.iter().filter(|u| u.settings.maxmemory == 0).count() as u64;
        let share = maxmemory
            .saturating_sub(capped)
            .checked_div(uncapped)
            .unwrap_or(0);
        for u in &users {
            let cap = u.settings.maxmemory;
            let (_, old_target, old_k) = store.tenant_limits(u.id);
            let (target, k) = if keep_targets {
                (old_target, old_k)
            } else {
                (if cap > 0 { cap } else { share }, 0)
            };
            store.set_tenant_limits(u.id, cap, target, k);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn acl_rules_and_passwords() {
        let r = Registry::new(None);
        assert!(r.get("default").unwrap().password_ok(b"anything"));
        let u = r
            .set_user("alice", &[b"on", b">secret", b"~*", b"+@all"])
            .unwrap();
        assert_eq!(u.id, 1);
        assert!(u.password_ok(b"secret"));
        assert!(!u.password_ok(b"wrong"));
        assert!(u.describe().starts_with("user alice on #"));
        // A bad rule changes nothing.
        assert!(matches!(
            r.set_user("alice", &[b"off", b"~cache:*"]),
            Err(TenantError::Rule(_))
        ));
        assert!(r.get("alice").unwrap().enabled);
        r.set_user("alice", &[b"off"]).unwrap();
        assert!(!r.get("alice").unwrap().password_ok(b"secret"));
        assert_eq!(r.delete_user("alice").unwrap().id, 1);
        assert!(r.get("alice").is_none());
        // The slot is reused.
        assert_eq!(r.set_user("bob", &[b"on", b"nopass"]).unwrap().id, 1);
        assert!(r.delete_user("default").is_none());
        assert!(matches!(
            r.set_user("x", &[b"#abc"]),
            Err(TenantError::Rule(_))
        ));
    }

    #[test]
    fn min_memory_sum_is_bounded_by_maxmemory() {
        let r = Registry::new(None);
        r.set_user("a", &[b"on", b"nopass"]).unwrap();
        r.set_user("b", &[b"on", b"nopass"]).unwrap();
        let set =
            |n: &str, v: &str| r.set_settings(n, &[("min-memory".into(), v.into())], 100 << 20);
        set("a", "60mb").unwrap();
        assert!(matches!(set("b", "50mb"), Err(TenantError::Invalid(_))));
        set("b", "40mb").unwrap();
        assert_eq!(r.min_memory_sum(), 100 << 20);
        assert!(matches!(
            r.set_settings("nobody", &[], 0),
            Err(TenantError::NoSuchUser)
        ));
        assert!(matches!(
            r.set_settings("a", &[("miss-penalty".into(), "soon".into())], 0),
            Err(TenantError::Invalid(_))
        ));
        let u = r
            .set_settings("a", &[("miss-penalty".into(), "2ms".into())], 0)
            .unwrap();
        assert_eq!(u.settings.miss_penalty_us, Some(2000.0));
    }
}
