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
//! ACL rules are Redis 7.0's in full (acl.c; see [`crate::acl`]): passwords, on/off,
//! command, key and channel permissions, selectors. A new user has no permissions, as
//! in Redis: a tenant that may do everything is `user NAME on >PASS ~* &* +@all`.
//!
//! Augur adds one rule, `tenant:NAME`: the user works in user NAME's keyspace instead of
//! its own, so that several users (say a read-only `%R~*` one and a read-write one) can
//! share one application's data. NAME must exist and not be bound itself; a user others
//! are bound to cannot be deleted before them; `tenant:` (or the user's own name, or
//! `reset`) returns the user to its own keyspace.

use crate::acl::{merge_selector_args, Perms, RuleError};
use augur_store::{Store, TenantId, MAX_TENANTS};
use parking_lot::RwLock;
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::Arc;

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
                    Some(crate::config::parse_number_in(value, 0.0, 1.0)?)
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
    /// `sanitize-payload` / `skip-sanitize-payload` as last set (ACL LIST shows it);
    /// Augur's RESTORE always validates payloads.
    pub sanitize: Option<bool>,
    /// SHA-256 of each password, lowercase hex (what ACL GETUSER and ACL LIST show).
    pub passwords: Vec<String>,
    /// Command, key and channel permissions (acl.c selectors).
    pub perms: Arc<Perms>,
    /// Augur's `tenant:NAME` rule: the user works in NAME's keyspace instead of its own
    /// (a read-only user next to the read-write one of the same application).
    pub keyspace: Option<String>,
    pub settings: TenantSettings,
}

impl User {
    fn new(name: &str, id: TenantId, allchannels: bool) -> User {
        User {
            name: name.to_string(),
            id,
            enabled: false,
            nopass: false,
            sanitize: None,
            passwords: Vec::new(),
            perms: Arc::new(Perms::new(allchannels)),
            keyspace: None,
            settings: TenantSettings::default(),
        }
    }

    pub fn password_ok(&self, pass: &[u8]) -> bool {
        self.enabled && (self.nopass || self.passwords.contains(&sha256_hex(pass)))
    }

    /// The flags of ACL GETUSER, in acl.c's ACLUserFlags order.
    pub fn flags(&self) -> Vec<&'static str> {
        let mut f = vec![if self.enabled { "on" } else { "off" }];
        if self.nopass {
            f.push("nopass");
        }
        match self.sanitize {
            Some(false) => f.push("skip-sanitize-payload"),
            Some(true) => f.push("sanitize-payload"),
            None => {}
        }
        f
    }

    /// The rule string of ACL LIST (ACLDescribeUser): `user NAME on #hash ~* &* +@all`.
    pub fn describe(&self) -> String {
        let mut s = format!("user {}", self.name);
        for f in self.flags() {
            s.push(' ');
            s.push_str(f);
        }
        for p in &self.passwords {
            s.push_str(" #");
            s.push_str(p);
        }
        s.push(' ');
        s.push_str(&self.perms.describe());
        if let Some(k) = &self.keyspace {
            s.push_str(" tenant:");
            s.push_str(k);
        }
        s
    }

    /// The config file's `tenant NAME k v ...` line for this user's TENANT SET settings
    /// that differ from the defaults (what CONFIG REWRITE writes), or None if none do.
    pub fn tenant_line(&self) -> Option<String> {
        let defaults = TenantSettings::default();
        let pairs: Vec<String> = TENANT_PARAMS
            .iter()
            .filter(|p| self.settings.get(p) != defaults.get(p))
            .map(|p| format!("{p} {}", self.settings.get(p).unwrap_or_default()))
            .collect();
        (!pairs.is_empty()).then(|| format!("tenant {} {}", self.name, pairs.join(" ")))
    }

    /// Applies one ACL rule (acl.c ACLSetUser); `allchannels` is `acl-pubsub-default`.
    /// Errors are ACLSetUserStringError's texts.
    pub fn apply_rule(&mut self, rule: &[u8], allchannels: bool) -> Result<(), String> {
        if rule.is_empty() {
            return Ok(());
        }
        let lower = rule.to_ascii_lowercase();
        let perms = Arc::make_mut(&mut self.perms);
        match lower.as_slice() {
            b"on" => self.enabled = true,
            b"off" => self.enabled = false,
            b"skip-sanitize-payload" => self.sanitize = Some(false),
            b"sanitize-payload" => self.sanitize = Some(true),
            b"nopass" => {
                self.nopass = true;
                self.passwords.clear();
            }
            b"resetpass" => {
                self.nopass = false;
                self.passwords.clear();
            }
            b"clearselectors" => perms.clear_selectors(),
            b"reset" => {
                self.nopass = false;
                self.passwords.clear();
                let root = perms.root();
                let _ = root.apply(b"resetkeys");
                let _ = root.apply(b"resetchannels");
                if allchannels {
                    let _ = root.apply(b"allchannels");
                }
                self.enabled = false;
                self.sanitize = Some(true);
                perms.clear_selectors();
                let _ = perms.root().apply(b"-@all");
                self.keyspace = None;
            }
            _ => match rule[0] {
                b'>' | b'#' => {
                    let h = if rule[0] == b'>' {
                        sha256_hex(&rule[1..])
                    } else {
                        check_hash(&rule[1..])?
                    };
                    if !self.passwords.contains(&h) {
                        self.passwords.push(h);
                    }
                    self.nopass = false;
                }
                b'<' | b'!' => {
                    let h = if rule[0] == b'<' {
                        sha256_hex(&rule[1..])
                    } else {
                        check_hash(&rule[1..])?
                    };
                    let before = self.passwords.len();
                    self.passwords.retain(|p| *p != h);
                    if self.passwords.len() == before {
                        return Err(RuleError::NoSuchPassword.message().into());
                    }
                }
                b'(' if rule.len() >= 2 && rule[rule.len() - 1] == b')' => perms
                    .add_selector(rule, allchannels)
                    .map_err(|e| e.message().to_string())?,
                _ if lower.starts_with(b"tenant:") => {
                    let name = String::from_utf8_lossy(&rule[7..]).into_owned();
                    self.keyspace = if name.is_empty() || name == self.name {
                        None
                    } else {
                        Some(name)
                    };
                }
                _ => perms
                    .root()
                    .apply(rule)
                    .map_err(|e| e.message().to_string())?,
            },
        }
        perms.refresh();
        Ok(())
    }
}

/// ACLCheckPasswordHash: 64 lowercase hex characters.
fn check_hash(h: &[u8]) -> Result<String, String> {
    if h.len() != 64
        || !h
            .iter()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(b))
    {
        return Err(RuleError::BadHash.message().into());
    }
    Ok(String::from_utf8_lossy(h).into_owned())
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
    /// `acl-pubsub-default allchannels`: new (and `reset`) users may use every channel.
    pub pubsub_default_all: AtomicBool,
}

struct Inner {
    by_name: HashMap<String, TenantId>,
    slots: Vec<Option<User>>,
}

/// "Usernames can't contain spaces or null characters" (ACL SETUSER).
pub fn valid_username(name: &[u8]) -> bool {
    !name.iter().any(|&b| b == b' ' || b == 0)
}

impl Registry {
    /// A registry with the `default` user (slot 0): `on nopass ~* &* +@all`, or with
    /// `requirepass` as its password.
    pub fn new(requirepass: Option<&str>) -> Registry {
        let mut default = User::new("default", 0, false);
        default.enabled = true;
        default.perms = Arc::new(Perms::all());
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
            pubsub_default_all: AtomicBool::new(false),
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

    /// The permissions of user slot `id` (a connection's refresh), None if deleted.
    pub fn perms_of(&self, id: TenantId) -> Option<Arc<Perms>> {
        self.inner
            .read()
            .slots
            .get(id as usize)
            .and_then(|u| u.as_ref().map(|u| u.perms.clone()))
    }

    /// The keyspace (tenant id) user `u` works in: its own, or its `tenant:` target's.
    pub fn keyspace_of(&self, u: &User) -> TenantId {
        u.keyspace
            .as_ref()
            .and_then(|k| self.inner.read().by_name.get(k).copied())
            .unwrap_or(u.id)
    }

    /// Every user, by slot order.
    pub fn users(&self) -> Vec<User> {
        self.inner.read().slots.iter().flatten().cloned().collect()
    }

    /// ACL SETUSER: creates the user (a new tenant, a fresh keyspace) if needed and
    /// applies the rules in order on a copy; nothing changes if any rule is invalid.
    /// Returns the user before (None if new) and after.
    pub fn set_user(
        &self,
        name: &str,
        rules: &[&[u8]],
    ) -> Result<(Option<User>, User), TenantError> {
        if !valid_username(name.as_bytes()) {
            return Err(TenantError::Invalid(
                "Usernames can't contain spaces or null characters".into(),
            ));
        }
        let merged = merge_selector_args(rules).map_err(|j| {
            TenantError::Invalid(format!(
                "Unmatched parenthesis in acl selector starting at '{}'.",
                String::from_utf8_lossy(rules[j])
            ))
        })?;
        let allchannels = self.pubsub_default_all.load(Relaxed);
        let mut g = self.inner.write();
        let existing = g.by_name.get(name).copied();
        let before = existing.and_then(|id| g.slots[id as usize].clone());
        let mut user = match &before {
            Some(u) => u.clone(),
            None => {
                let free = g
                    .slots
                    .iter()
                    .position(Option::is_none)
                    .unwrap_or(g.slots.len());
                if free >= MAX_TENANTS {
                    return Err(TenantError::TooMany);
                }
                User::new(name, free as TenantId, allchannels)
            }
        };
        for r in &merged {
            user.apply_rule(r, allchannels).map_err(|e| {
                TenantError::Rule(format!(
                    "Error in ACL SETUSER modifier '{}': {e}",
                    String::from_utf8_lossy(r)
                ))
            })?;
        }
        if let Some(k) = &user.keyspace {
            let target = g
                .by_name
                .get(k)
                .and_then(|&id| g.slots[id as usize].as_ref());
            match target {
                None => {
                    return Err(TenantError::Rule(format!(
                        "Error in ACL SETUSER modifier 'tenant:{k}': No such user '{k}'"
                    )))
                }
                Some(t) if t.keyspace.is_some() => {
                    return Err(TenantError::Rule(format!(
                        "Error in ACL SETUSER modifier 'tenant:{k}': the user '{k}' works in another user's keyspace itself"
                    )))
                }
                Some(_) => {}
            }
            if let Some(b) = g
                .slots
                .iter()
                .flatten()
                .find(|o| o.keyspace.as_deref() == Some(name))
            {
                return Err(TenantError::Rule(format!(
                    "Error in ACL SETUSER modifier 'tenant:{k}': the user '{}' works in this user's keyspace",
                    b.name
                )));
            }
        }
        let id = user.id as usize;
        if id >= g.slots.len() {
            g.slots.resize(id + 1, None);
        }
        g.slots[id] = Some(user.clone());
        g.by_name.insert(name.to_string(), user.id);
        Ok((before, user))
    }

    /// ACL LOAD and `aclfile` at startup (acl.c ACLLoadFromFile): parses `user NAME
    /// rules...` lines and replaces every user at once, or nothing with Redis's error
    /// text. A user kept by name keeps its slot, hence its keyspace and tenant settings;
    /// users missing from the file are returned for the caller to drop, with the slots
    /// of the users it created. A file without
    /// `default` gets `default on nopass ~* &* +@all`.
    pub fn load_file(&self, text: &str, fname: &str) -> Result<(Vec<User>, Vec<TenantId>), String> {
        let allchannels = self.pubsub_default_all.load(Relaxed);
        let mut errors = String::new();
        let mut parsed: Vec<(String, User)> = Vec::new();
        for (i, raw) in text.split('\n').enumerate() {
            let linenum = i + 1;
            let line = raw.trim_matches(|c| c == ' ' || c == '\t' || c == '\r');
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let Some(argv) = crate::acl::split_args(line.as_bytes()) else {
                errors.push_str(&format!(
                    "{fname}:{linenum}: unbalanced quotes in acl line. "
                ));
                continue;
            };
            if argv.len() < 2 || argv[0] != b"user" {
                errors.push_str(&format!(
                    "{fname}:{linenum} should start with user keyword followed by the username. "
                ));
                continue;
            }
            let name = String::from_utf8_lossy(&argv[1]).into_owned();
            if !valid_username(&argv[1]) {
                errors.push_str(&format!(
                    "'{fname}:{linenum}: username '{name}' contains invalid characters. "
                ));
                continue;
            }
            if parsed.iter().any(|(n, _)| *n == name) {
                errors.push_str(&format!(
                    "WARNING: Duplicate user '{name}' found on line {linenum}. "
                ));
                continue;
            }
            let rules: Vec<&[u8]> = argv[2..].iter().map(Vec::as_slice).collect();
            let Ok(merged) = merge_selector_args(&rules) else {
                errors.push_str(&format!(
                    "{fname}:{linenum}: Unmatched parenthesis in selector definition."
                ));
                continue;
            };
            let mut u = User::new(&name, 0, allchannels);
            for r in &merged {
                if let Err(e) = u.apply_rule(r, allchannels) {
                    errors.push_str(&format!(
                        "{fname}:{linenum}: Error in applying operation '{}': {e}. ",
                        String::from_utf8_lossy(r)
                    ));
                    break;
                }
            }
            parsed.push((name, u));
        }
        if !parsed.iter().any(|(n, _)| n == "default") {
            let mut d = User::new("default", 0, allchannels);
            d.enabled = true;
            d.nopass = true;
            d.perms = Arc::new(Perms::all());
            parsed.push(("default".into(), d));
        }
        for (name, u) in &parsed {
            if let Some(k) = &u.keyspace {
                match parsed.iter().find(|(n, _)| n == k) {
                    Some((_, t)) if t.keyspace.is_none() => {}
                    _ => errors.push_str(&format!(
                        "{fname}: user '{name}': tenant:{k} names no user with its own keyspace. "
                    )),
                }
            }
        }
        if !errors.is_empty() {
            errors.push_str("WARNING: ACL errors detected, no change to the previously active ACL rules was performed");
            return Err(errors);
        }
        let mut g = self.inner.write();
        let old_ids: HashMap<String, TenantId> = g.by_name.clone();
        let mut removed = Vec::new();
        for (n, id) in &old_ids {
            if !parsed.iter().any(|(p, _)| p == n) {
                if let Some(u) = g.slots[*id as usize].take() {
                    removed.push(u);
                }
            }
        }
        let mut created = Vec::new();
        let mut by_name = HashMap::new();
        let mut slots: Vec<Option<User>> = vec![None; g.slots.len().max(1)];
        // Kept users keep their slot (keyspace, settings); new ones take free slots.
        for (n, u) in parsed.iter_mut() {
            if let Some(&id) = old_ids.get(n.as_str()) {
                u.id = id;
                if let Some(old) = g.slots[id as usize].as_ref() {
                    u.settings = old.settings.clone();
                }
                by_name.insert(n.clone(), id);
                slots[id as usize] = Some(u.clone());
            }
        }
        for (n, u) in parsed.iter_mut() {
            if by_name.contains_key(n.as_str()) {
                continue;
            }
            let free = slots
                .iter()
                .enumerate()
                .position(|(_, s)| s.is_none())
                .unwrap_or(slots.len());
            if free >= MAX_TENANTS {
                return Err("Too many users for the tenant slots".into());
            }
            if free >= slots.len() {
                slots.resize(free + 1, None);
            }
            u.id = free as TenantId;
            by_name.insert(n.clone(), u.id);
            slots[free] = Some(u.clone());
            created.push(u.id);
        }
        g.by_name = by_name;
        g.slots = slots;
        Ok((removed, created))
    }

    /// ACL DELUSER: removes the user; the caller drops its keyspace and connections.
    /// The default user cannot be removed; nor a user others work in (`tenant:`), which
    /// is an error naming one of them.
    pub fn delete_user(&self, name: &str) -> Result<Option<User>, String> {
        if name == "default" {
            return Ok(None);
        }
        let mut g = self.inner.write();
        if let Some(b) = g
            .slots
            .iter()
            .flatten()
            .find(|o| o.keyspace.as_deref() == Some(name))
        {
            return Err(format!(
                "The user '{name}' is the tenant of user '{}' (tenant:{name}): delete or rebind that user first",
                b.name
            ));
        }
        let Some(id) = g.by_name.remove(name) else {
            return Ok(None);
        };
        Ok(g.slots[id as usize].take())
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
        assert!(r.get("default").unwrap().perms.unrestricted);
        let (_, u) = r
            .set_user("alice", &[b"on", b">secret", b"~*", b"&*", b"+@all"])
            .unwrap();
        assert_eq!(u.id, 1);
        assert!(u.password_ok(b"secret"));
        assert!(!u.password_ok(b"wrong"));
        assert!(u.perms.unrestricted);
        assert!(u.describe().starts_with("user alice on #"));
        assert!(u.describe().ends_with(" ~* &* +@all"));
        // A bad rule changes nothing.
        assert!(matches!(
            r.set_user("alice", &[b"off", b"~cache:*"]),
            Err(TenantError::Rule(_))
        ));
        assert!(r.get("alice").unwrap().enabled);
        r.set_user("alice", &[b"off"]).unwrap();
        assert!(!r.get("alice").unwrap().password_ok(b"secret"));
        assert_eq!(r.delete_user("alice").unwrap().unwrap().id, 1);
        assert!(r.get("alice").is_none());
        // The slot is reused; a new user has no permissions (Redis's default).
        let (before, bob) = r.set_user("bob", &[b"on", b"nopass"]).unwrap();
        assert!(before.is_none());
        assert_eq!(bob.id, 1);
        assert!(!bob.perms.unrestricted);
        assert_eq!(bob.describe(), "user bob on nopass resetchannels -@all");
        assert!(r.delete_user("default").unwrap().is_none());
        assert!(matches!(
            r.set_user("x", &[b"#abc"]),
            Err(TenantError::Rule(_))
        ));
        assert!(matches!(
            r.set_user("a a", &[]),
            Err(TenantError::Invalid(_))
        ));
        assert!(matches!(
            r.set_user("x", &[b"(~a"]),
            Err(TenantError::Invalid(e)) if e == "Unmatched parenthesis in acl selector starting at '(~a'."
        ));
    }

    #[test]
    fn tenant_binding() {
        let r = Registry::new(None);
        r.set_user("app", &[b"on", b"nopass", b"~*", b"+@all"])
            .unwrap();
        let (_, ro) = r
            .set_user(
                "app-ro",
                &[b"on", b"nopass", b"%R~*", b"+@read", b"tenant:app"],
            )
            .unwrap();
        let app = r.get("app").unwrap();
        assert_eq!(r.keyspace_of(&ro), app.id);
        assert_ne!(ro.id, app.id);
        assert!(ro.describe().ends_with(" tenant:app"));
        // No chains, no binding to a missing user, no deleting a bound-to user.
        assert!(r.set_user("x", &[b"tenant:app-ro"]).is_err());
        assert!(r.set_user("x", &[b"tenant:nobody"]).is_err());
        assert!(r.set_user("app", &[b"tenant:default"]).is_err());
        assert!(r.delete_user("app").is_err());
        let (_, ro) = r.set_user("app-ro", &[b"tenant:"]).unwrap();
        assert_eq!(r.keyspace_of(&ro), ro.id);
        assert!(r.delete_user("app").unwrap().is_some());
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
