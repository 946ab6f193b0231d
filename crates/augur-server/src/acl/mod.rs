//! ACL permissions: Redis 7.0's acl.c. Command rules (`+cmd`, `-cmd`, `+cmd|sub`,
//! `+@category`, `allcommands`), key patterns (`~pat`, `%R~pat`, `%W~pat`, `allkeys`),
//! channel patterns (`&pat`, `allchannels`) and selectors (`(...)`), checked with Redis's
//! rules: a command runs if any selector of the user allows the command, every key it
//! names (with the read/write access its key specs declare) and every channel it
//! publishes or subscribes to.
//!
//! The command universe is Redis 7.0.15's whole command table (cmdtable's
//! `REDIS_COMMANDS`, the one copy of Redis's metadata Augur keeps) plus Augur's own
//! TENANT family, not only what Augur serves, so an ACL file written for Redis (`-debug`,
//! `+@all -@dangerous`) loads unchanged and describes back the same. Command ids are
//! indexes into that universe ([`rcmds`]); keys are found by cmdtable's key specs.
//!
//! The request path pays for none of this unless the user is restricted: a user with a
//! selector that allows every command, key and channel is [`Perms::unrestricted`], and
//! the connection skips the check on one flag (see `commands::execute`).

use crate::cmdtable::{self, RedisCommand};
use augur_store::glob_match;
use std::collections::BTreeMap;
use std::sync::OnceLock;

/// ACL categories, as bits, in Redis's `ACL CAT` order.
pub mod cat {
    pub const KEYSPACE: u32 = 1;
    pub const READ: u32 = 1 << 1;
    pub const WRITE: u32 = 1 << 2;
    pub const SET: u32 = 1 << 3;
    pub const SORTEDSET: u32 = 1 << 4;
    pub const LIST: u32 = 1 << 5;
    pub const HASH: u32 = 1 << 6;
    pub const STRING: u32 = 1 << 7;
    pub const BITMAP: u32 = 1 << 8;
    pub const HYPERLOGLOG: u32 = 1 << 9;
    pub const GEO: u32 = 1 << 10;
    pub const STREAM: u32 = 1 << 11;
    pub const PUBSUB: u32 = 1 << 12;
    pub const ADMIN: u32 = 1 << 13;
    pub const FAST: u32 = 1 << 14;
    pub const SLOW: u32 = 1 << 15;
    pub const BLOCKING: u32 = 1 << 16;
    pub const DANGEROUS: u32 = 1 << 17;
    pub const CONNECTION: u32 = 1 << 18;
    pub const TRANSACTION: u32 = 1 << 19;
    pub const SCRIPTING: u32 = 1 << 20;
}

/// Category names in `ACL CAT` order; bit i is `1 << i`.
pub const CATEGORIES: &[&str] = &[
    "keyspace",
    "read",
    "write",
    "set",
    "sortedset",
    "list",
    "hash",
    "string",
    "bitmap",
    "hyperloglog",
    "geo",
    "stream",
    "pubsub",
    "admin",
    "fast",
    "slow",
    "blocking",
    "dangerous",
    "connection",
    "transaction",
    "scripting",
];

/// The bit of a category name (case-insensitive, without `@`).
pub fn category_bit(name: &str) -> Option<u32> {
    CATEGORIES
        .iter()
        .position(|c| c.eq_ignore_ascii_case(name))
        .map(|i| 1 << i)
}

/// Key-spec flags (Redis's CMD_KEY_*).
pub mod kf {
    pub const RO: u16 = 1;
    pub const RW: u16 = 1 << 1;
    pub const OW: u16 = 1 << 2;
    pub const RM: u16 = 1 << 3;
    pub const ACCESS: u16 = 1 << 4;
    pub const UPDATE: u16 = 1 << 5;
    pub const INSERT: u16 = 1 << 6;
    pub const DELETE: u16 = 1 << 7;
    pub const NOT_KEY: u16 = 1 << 8;
    pub const INCOMPLETE: u16 = 1 << 9;
    pub const VARIABLE_FLAGS: u16 = 1 << 10;
}

/// One command or subcommand of Redis 7.0.15 (or Augur's TENANT family).
#[derive(Debug)]
pub struct RCmd {
    /// Lower case; `container|sub` for subcommands.
    pub name: &'static str,
    /// Redis's arity (negative: at least).
    pub arity: i32,
    /// Category bits ([`category_bit`]).
    pub cats: u32,
    pub no_auth: bool,
    /// Redis's metadata (key specs); None for Augur's own commands, which take no keys.
    pub redis: Option<&'static RedisCommand>,
}

impl RCmd {
    fn from_redis(c: &'static RedisCommand) -> RCmd {
        RCmd {
            name: c.name,
            arity: c.arity,
            cats: category_bits(c.acl_categories),
            no_auth: c.has_flag("no_auth"),
            redis: Some(c),
        }
    }

    fn augur(name: &'static str, arity: i32) -> RCmd {
        RCmd {
            name,
            arity,
            cats: category_bits(cmdtable::acl_categories(name)),
            no_auth: false,
            redis: None,
        }
    }
}

fn category_bits(names: &[&str]) -> u32 {
    names
        .iter()
        .filter_map(|n| category_bit(n.trim_start_matches('@')))
        .fold(0, |a, b| a | b)
}

/// The command universe, sorted by name (ids are binary-search indexes): every command
/// and subcommand of Redis 7.0.15, and those Augur serves that Redis 7.0 does not have
/// (TENANT, and Redis 7.2's CLIENT SETINFO and NO-TOUCH).
pub fn rcmds() -> &'static [RCmd] {
    static T: OnceLock<Vec<RCmd>> = OnceLock::new();
    T.get_or_init(|| {
        let mut v = Vec::new();
        for c in crate::redis_commands::REDIS_COMMANDS {
            v.push(RCmd::from_redis(c));
            v.extend(c.subcommands.iter().map(RCmd::from_redis));
        }
        let not_in_redis = |name: &str| cmdtable::redis_command(name.as_bytes()).is_none();
        for c in cmdtable::COMMANDS {
            if not_in_redis(c.name) {
                v.push(RCmd::augur(c.name, c.arity));
            }
            for s in c.subcommands.iter().filter(|s| not_in_redis(s.name)) {
                v.push(RCmd::augur(s.name, s.arity));
            }
        }
        v.sort_by(|a, b| a.name.cmp(b.name));
        v
    })
}

/// Command ids are `u16` indexes into [`rcmds`].
pub type CmdId = u16;

const WORDS: usize = 8;
const _: () = assert!(WORDS * 64 > 400, "command bitmap too small for the table");

struct Universe {
    children: Vec<Vec<CmdId>>,
    parent: Vec<Option<CmdId>>,
}

fn universe() -> &'static Universe {
    static U: OnceLock<Universe> = OnceLock::new();
    U.get_or_init(|| {
        let n = rcmds().len();
        let mut children = vec![Vec::new(); n];
        let mut parent = vec![None; n];
        for (i, c) in rcmds().iter().enumerate() {
            if let Some((p, _)) = c.name.split_once('|') {
                if let Some(pid) = lookup(p) {
                    children[pid as usize].push(i as CmdId);
                    parent[i] = Some(pid);
                }
            }
        }
        Universe { children, parent }
    })
}

/// The id of a command or `container|sub` name, case-insensitive.
pub fn lookup(name: &str) -> Option<CmdId> {
    let mut buf = [0u8; 64];
    if name.len() > buf.len() {
        return None;
    }
    for (d, s) in buf.iter_mut().zip(name.bytes()) {
        *d = s.to_ascii_lowercase();
    }
    let lower = std::str::from_utf8(&buf[..name.len()]).ok()?;
    rcmds()
        .binary_search_by(|c| c.name.cmp(lower))
        .ok()
        .map(|i| i as CmdId)
}

pub fn rcmd(id: CmdId) -> &'static RCmd {
    &rcmds()[id as usize]
}

/// Whether a command is a container (CONFIG, CLIENT, ACL, ...).
pub fn has_subcommands(id: CmdId) -> bool {
    !children(id).is_empty()
}

fn children(id: CmdId) -> &'static [CmdId] {
    &universe().children[id as usize]
}

fn parent(id: CmdId) -> Option<CmdId> {
    universe().parent[id as usize]
}

/// The id Augur's dispatch should check for a request: the subcommand's for a container
/// command with a known subcommand, else the command's.
pub fn request_id(name: &str, args: crate::resp::Args<'_>) -> Option<CmdId> {
    let id = lookup(name)?;
    if !children(id).is_empty() && args.len() >= 2 {
        let sub = args.get(1);
        if sub.len() <= 40 {
            let full = format!("{}|{}", rcmd(id).name, String::from_utf8_lossy(sub));
            if let Some(s) = lookup(&full) {
                return Some(s);
            }
        }
    }
    Some(id)
}

// Selector flags (Redis's SELECTOR_FLAG_*).
const ROOT: u8 = 1;
const ALLKEYS: u8 = 1 << 1;
const ALLCOMMANDS: u8 = 1 << 2;
const ALLCHANNELS: u8 = 1 << 3;

/// Key pattern permission bits (ACL_READ_PERMISSION, ACL_WRITE_PERMISSION).
const PERM_R: u8 = 1;
const PERM_W: u8 = 2;
const PERM_RW: u8 = 3;

/// Why a rule was refused: ACLSetUserStringError's cases (the errno Redis sets).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RuleError {
    /// EINVAL
    Syntax,
    /// ENOENT
    Unknown,
    /// EEXIST
    KeyAfterAll,
    /// EISDIR
    ChannelAfterAll,
    /// ENODEV
    NoSuchPassword,
    /// EBADMSG
    BadHash,
    /// ECHILD
    SubcommandFirstArg,
}

impl RuleError {
    /// ACLSetUserStringError's text.
    pub fn message(&self) -> &'static str {
        match self {
            RuleError::Syntax => "Syntax error",
            RuleError::Unknown => "Unknown command or category name in ACL",
            RuleError::KeyAfterAll => "Adding a pattern after the * pattern (or the 'allkeys' flag) is not valid and does not have any effect. Try 'resetkeys' to start with an empty list of patterns",
            RuleError::ChannelAfterAll => "Adding a pattern after the * pattern (or the 'allchannels' flag) is not valid and does not have any effect. Try 'resetchannels' to start with an empty list of channels",
            RuleError::NoSuchPassword => "The password you are trying to remove from the user does not exist",
            RuleError::BadHash => "The password hash must be exactly 64 characters and contain only lowercase hexadecimal characters",
            RuleError::SubcommandFirstArg => "Allowing first-arg of a subcommand is not supported",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct KeyPattern {
    perm: u8,
    pattern: Vec<u8>,
}

/// One selector (aclSelector): the root one (rules outside parentheses) or one of
/// `(...)`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Selector {
    flags: u8,
    allowed: [u64; WORDS],
    /// `+cmd|firstarg` for commands without subcommands (SELECT 0, DEBUG OBJECT).
    firstargs: BTreeMap<CmdId, Vec<String>>,
    patterns: Vec<KeyPattern>,
    channels: Vec<Vec<u8>>,
}

impl Selector {
    /// ACLCreateSelector: no commands, no keys; channels per `acl-pubsub-default`.
    pub fn new(root: bool, allchannels_default: bool) -> Selector {
        let mut flags = if root { ROOT } else { 0 };
        if allchannels_default {
            flags |= ALLCHANNELS;
        }
        Selector {
            flags,
            allowed: [0; WORDS],
            firstargs: BTreeMap::new(),
            patterns: Vec::new(),
            channels: Vec::new(),
        }
    }

    fn bit(&self, id: CmdId) -> bool {
        self.allowed[id as usize / 64] & (1 << (id % 64)) != 0
    }

    fn set_bit(&mut self, id: CmdId, on: bool) {
        let (w, b) = (id as usize / 64, 1u64 << (id % 64));
        if on {
            self.allowed[w] |= b;
        } else {
            self.allowed[w] &= !b;
            self.flags &= !ALLCOMMANDS;
        }
    }

    /// ACLChangeSelectorPerm: a container's subcommands follow it.
    fn change_perm(&mut self, id: CmdId, allow: bool) {
        self.set_bit(id, allow);
        self.firstargs.remove(&id);
        for &s in children(id) {
            self.set_bit(s, allow);
        }
    }

    fn set_category(&mut self, bit: u32, allow: bool) {
        for (i, c) in rcmds().iter().enumerate() {
            if c.cats & bit != 0 {
                self.change_perm(i as CmdId, allow);
            }
        }
    }

    fn all_commands(&mut self, on: bool) {
        self.allowed = if on { [u64::MAX; WORDS] } else { [0; WORDS] };
        if on {
            self.flags |= ALLCOMMANDS;
        } else {
            self.flags &= !ALLCOMMANDS;
        }
        self.firstargs.clear();
    }

    /// ACLSetSelector: applies one selector rule.
    pub fn apply(&mut self, op: &[u8]) -> Result<(), RuleError> {
        let lower = op.to_ascii_lowercase();
        match lower.as_slice() {
            b"allkeys" | b"~*" => {
                self.flags |= ALLKEYS;
                self.patterns.clear();
            }
            b"resetkeys" => {
                self.flags &= !ALLKEYS;
                self.patterns.clear();
            }
            b"allchannels" | b"&*" => {
                self.flags |= ALLCHANNELS;
                self.channels.clear();
            }
            b"resetchannels" => {
                self.flags &= !ALLCHANNELS;
                self.channels.clear();
            }
            b"allcommands" | b"+@all" => self.all_commands(true),
            b"nocommands" | b"-@all" => self.all_commands(false),
            _ => return self.apply_pattern_or_command(op),
        }
        Ok(())
    }

    fn apply_pattern_or_command(&mut self, op: &[u8]) -> Result<(), RuleError> {
        match op.first() {
            Some(b'~') | Some(b'%') => {
                if self.flags & ALLKEYS != 0 {
                    return Err(RuleError::KeyAfterAll);
                }
                let mut perm = 0u8;
                let mut offset = 1;
                if op[0] == b'%' {
                    loop {
                        let Some(&ch) = op.get(offset) else {
                            // "%R" without "~": Redis reads past the string and fails.
                            return Err(RuleError::Syntax);
                        };
                        match ch.to_ascii_uppercase() {
                            b'R' if perm & PERM_R == 0 => perm |= PERM_R,
                            b'W' if perm & PERM_W == 0 => perm |= PERM_W,
                            b'~' if perm != 0 => {
                                offset += 1;
                                break;
                            }
                            _ => return Err(RuleError::Syntax),
                        }
                        offset += 1;
                    }
                } else {
                    perm = PERM_RW;
                }
                let pattern = &op[offset..];
                if pattern.contains(&b' ') {
                    return Err(RuleError::Syntax);
                }
                if pattern == b"*" && perm == PERM_RW {
                    self.flags |= ALLKEYS;
                    self.patterns.clear();
                    return Ok(());
                }
                match self.patterns.iter_mut().find(|p| p.pattern == pattern) {
                    Some(p) => p.perm |= perm,
                    None => self.patterns.push(KeyPattern {
                        perm,
                        pattern: pattern.to_vec(),
                    }),
                }
                self.flags &= !ALLKEYS;
            }
            Some(b'&') => {
                if self.flags & ALLCHANNELS != 0 {
                    return Err(RuleError::ChannelAfterAll);
                }
                let pat = &op[1..];
                if pat.contains(&b' ') {
                    return Err(RuleError::Syntax);
                }
                if !self.channels.iter().any(|c| c == pat) {
                    self.channels.push(pat.to_vec());
                }
                self.flags &= !ALLCHANNELS;
            }
            Some(&sign @ (b'+' | b'-')) if op.get(1) == Some(&b'@') => {
                let name = std::str::from_utf8(&op[2..]).map_err(|_| RuleError::Unknown)?;
                let bit = category_bit(name).ok_or(RuleError::Unknown)?;
                self.set_category(bit, sign == b'+');
            }
            Some(b'+') => {
                let name = std::str::from_utf8(&op[1..]).map_err(|_| RuleError::Unknown)?;
                match name.rsplit_once('|') {
                    None => {
                        let id = lookup(name).ok_or(RuleError::Unknown)?;
                        self.change_perm(id, true);
                    }
                    Some((cmd, sub)) => {
                        let id = lookup(cmd).ok_or(RuleError::Unknown)?;
                        if parent(id).is_some() {
                            return Err(RuleError::SubcommandFirstArg);
                        }
                        if sub.is_empty() {
                            return Err(RuleError::Syntax);
                        }
                        if !children(id).is_empty() {
                            let sid = lookup(name).ok_or(RuleError::Unknown)?;
                            self.change_perm(sid, true);
                        } else {
                            let list = self.firstargs.entry(id).or_default();
                            if !list.iter().any(|s| s.eq_ignore_ascii_case(sub)) {
                                list.push(sub.to_string());
                            }
                        }
                    }
                }
            }
            Some(b'-') => {
                let name = std::str::from_utf8(&op[1..]).map_err(|_| RuleError::Unknown)?;
                let id = lookup(name).ok_or(RuleError::Unknown)?;
                self.change_perm(id, false);
            }
            _ => return Err(RuleError::Syntax),
        }
        Ok(())
    }

    fn can_run_future_commands(&self) -> bool {
        // Redis tests a reserved command-id bit only +@all sets; Augur keeps the flag's
        // twin: every bit past the table is set only by +@all.
        self.allowed[WORDS - 1] & (1 << 63) != 0
    }

    fn count_category(&self, bit: u32) -> (usize, usize) {
        let (mut on, mut off) = (0, 0);
        for (i, c) in rcmds().iter().enumerate() {
            if c.cats & bit != 0 {
                if self.bit(i as CmdId) {
                    on += 1
                } else {
                    off += 1
                }
            }
        }
        (on, off)
    }

    /// ACLDescribeSelectorCommandRules (7.0): `+@all` or `-@all`, then repeatedly the
    /// category that fits best (more commands in common than different, fewest
    /// differences, then most in common), then single commands and first-args to make
    /// the bitmap exact.
    pub fn describe_commands(&self) -> String {
        let additive = !self.can_run_future_commands();
        let mut rules = String::from(if additive { "-@all " } else { "+@all " });
        let mut fake = Selector::new(false, false);
        fake.all_commands(!additive);
        let mut temp = Selector::new(false, false);
        temp.allowed = self.allowed;
        let mut applied = [false; 32];
        loop {
            let mut best = None;
            let (mut mindiff, mut maxsame) = (usize::MAX, 0usize);
            for (j, _) in CATEGORIES.iter().enumerate() {
                if applied[j] {
                    continue;
                }
                let (on, off) = temp.count_category(1 << j);
                let (diff, same) = if additive { (off, on) } else { (on, off) };
                if same > diff && (diff < mindiff || (diff == mindiff && same > maxsame)) {
                    best = Some(j);
                    mindiff = diff;
                    maxsame = same;
                }
            }
            let Some(j) = best else { break };
            fake.set_category(1 << j, additive);
            temp.set_category(1 << j, !additive);
            rules.push_str(if additive { "+@" } else { "-@" });
            rules.push_str(CATEGORIES[j]);
            rules.push(' ');
            applied[j] = true;
        }
        // Top-level commands in table order, each followed by its subcommands.
        for i in 0..rcmds().len() {
            let id = i as CmdId;
            if parent(id).is_some() {
                continue;
            }
            self.describe_single(&mut fake, id, &mut rules);
            for &s in children(id) {
                self.describe_single(&mut fake, s, &mut rules);
            }
        }
        rules.pop();
        rules
    }

    fn describe_single(&self, fake: &mut Selector, id: CmdId, rules: &mut String) {
        let user = self.bit(id);
        if user != fake.bit(id) {
            rules.push(if user { '+' } else { '-' });
            rules.push_str(rcmd(id).name);
            rules.push(' ');
            fake.change_perm(id, user);
        }
        if !user {
            if let Some(args) = self.firstargs.get(&id) {
                for a in args {
                    rules.push('+');
                    rules.push_str(rcmd(id).name);
                    rules.push('|');
                    rules.push_str(a);
                    rules.push(' ');
                }
            }
        }
    }

    /// The key patterns as ACL GETUSER's `keys` field shows them.
    pub fn describe_keys(&self) -> String {
        if self.flags & ALLKEYS != 0 {
            return "~*".into();
        }
        self.patterns
            .iter()
            .map(|p| {
                let prefix = match p.perm {
                    PERM_R => "%R~",
                    PERM_W => "%W~",
                    _ => "~",
                };
                format!("{prefix}{}", String::from_utf8_lossy(&p.pattern))
            })
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// The channel patterns as ACL GETUSER's `channels` field shows them.
    pub fn describe_channels(&self) -> String {
        if self.flags & ALLCHANNELS != 0 {
            return "&*".into();
        }
        self.channels
            .iter()
            .map(|c| format!("&{}", String::from_utf8_lossy(c)))
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// ACLDescribeSelector: keys, channels, commands (ACL LIST's form).
    pub fn describe(&self) -> String {
        let mut s = String::new();
        let keys = self.describe_keys();
        if !keys.is_empty() {
            s.push_str(&keys);
            s.push(' ');
        }
        if self.flags & ALLCHANNELS != 0 {
            s.push_str("&* ");
        } else {
            s.push_str("resetchannels ");
            let ch = self.describe_channels();
            if !ch.is_empty() {
                s.push_str(&ch);
                s.push(' ');
            }
        }
        s.push_str(&self.describe_commands());
        s
    }

    fn unrestricted(&self) -> bool {
        self.flags & (ALLCOMMANDS | ALLKEYS | ALLCHANNELS) == ALLCOMMANDS | ALLKEYS | ALLCHANNELS
    }

    /// ACLSelectorCheckCmd.
    fn check(&self, req: &Request<'_>, keys: &[(usize, u16)]) -> Result<(), Denied> {
        if self.flags & ALLCOMMANDS == 0 && !rcmd(req.id).no_auth && !self.bit(req.id) {
            let allowed = req.args.len() >= 2
                && self.firstargs.get(&req.id).is_some_and(|list| {
                    let idx = if parent(req.id).is_some() { 2 } else { 1 };
                    idx < req.args.len() && {
                        let a = req.args.get(idx);
                        list.iter().any(|s| s.as_bytes().eq_ignore_ascii_case(a))
                    }
                });
            if !allowed {
                return Err(Denied::Command);
            }
        }
        if self.flags & ALLKEYS == 0 {
            for &(pos, flags) in keys {
                let mut need = 0u8;
                if flags & kf::ACCESS != 0 {
                    need |= PERM_R;
                }
                if flags & (kf::INSERT | kf::DELETE | kf::UPDATE) != 0 {
                    need |= PERM_W;
                }
                let key = req.args.get(pos);
                let ok = self
                    .patterns
                    .iter()
                    .any(|p| p.perm & need == need && glob_match(&p.pattern, key));
                if !ok {
                    return Err(Denied::Key(pos));
                }
            }
        }
        if self.flags & ALLCHANNELS == 0 {
            for &(pos, is_pattern) in &channels_of(req) {
                if !channel_allowed(&self.channels, req.args.get(pos), is_pattern) {
                    return Err(Denied::Channel(pos));
                }
            }
        }
        Ok(())
    }
}

/// ACLCheckChannelAgainstList: patterns (PSUBSCRIBE) must equal a permitted pattern
/// literally; channels are glob-matched.
fn channel_allowed(list: &[Vec<u8>], channel: &[u8], is_pattern: bool) -> bool {
    list.iter().any(|p| {
        if is_pattern {
            p.as_slice() == channel
        } else {
            glob_match(p, channel)
        }
    })
}

/// A permission failure: the reason and the argument at fault (ACL_DENIED_*).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Denied {
    Command,
    Key(usize),
    Channel(usize),
}

impl Denied {
    fn rank(self) -> (u8, usize) {
        match self {
            Denied::Command => (1, 0),
            Denied::Key(p) => (2, p),
            Denied::Channel(p) => (4, p),
        }
    }

    /// The top-level NOPERM error (server.c processCommand, 7.0).
    pub fn error(self, fullname: &str) -> String {
        match self {
            Denied::Command => format!(
                "NOPERM this user has no permissions to run the '{fullname}' command"
            ),
            Denied::Key(_) => "NOPERM this user has no permissions to access one of the keys used as arguments".into(),
            Denied::Channel(_) => "NOPERM this user has no permissions to access one of the channels used as arguments".into(),
        }
    }

    /// EXEC's error when the rules changed after queueing (multi.c).
    pub fn exec_error(self) -> String {
        let reason = match self {
            Denied::Command => "no permission to execute the command or subcommand",
            Denied::Key(_) => "no permission to touch the specified keys",
            Denied::Channel(_) => "no permission to access one of the channels used as arguments",
        };
        format!("NOPERM ACLs rules changed between the moment the transaction was accumulated and the EXEC call. This command is no longer allowed for the following reason: {reason}")
    }

    /// The error `redis.call` raises (script.c scriptVerifyACL), without "ERR ".
    pub fn script_error(self) -> &'static str {
        match self {
            Denied::Command => "The user executing the script can't run this command or subcommand",
            Denied::Key(_) => "The user executing the script can't access at least one of the keys mentioned in the command arguments",
            Denied::Channel(_) => "The user executing the script can't publish to the channel mentioned in the command",
        }
    }

    /// ACL DRYRUN's answer (acl.c getAclErrorMessage in the 7.0 DRYRUN).
    pub fn dryrun_message(self, fullname: &str, args: crate::resp::Args<'_>) -> String {
        match self {
            Denied::Command => {
                format!("This user has no permissions to run the '{fullname}' command")
            }
            Denied::Key(p) => format!(
                "This user has no permissions to access the '{}' key",
                String::from_utf8_lossy(args.get(p))
            ),
            Denied::Channel(p) => format!(
                "This user has no permissions to access the '{}' channel",
                String::from_utf8_lossy(args.get(p))
            ),
        }
    }

    pub fn reason(self) -> &'static str {
        match self {
            Denied::Command => "command",
            Denied::Key(_) => "key",
            Denied::Channel(_) => "channel",
        }
    }
}

/// A request to check: the command id and its arguments (argument 0 is the name).
pub struct Request<'a> {
    pub id: CmdId,
    pub args: crate::resp::Args<'a>,
}

/// getKeysFromCommandWithSpecs: (argument index, key-spec flags) of every key, found by
/// cmdtable's key specs and, for SET, BITFIELD, SORT and MIGRATE whose flags or keys
/// depend on the arguments, their own getkeys procedures (the same code COMMAND
/// GETKEYSANDFLAGS answers from). Arguments the specs cannot parse name no keys.
pub fn keys_of(req: &Request<'_>) -> Vec<(usize, u16)> {
    let Some(c) = rcmd(req.id).redis else {
        return Vec::new();
    };
    let args: Vec<&[u8]> = req.args.iter().collect();
    cmdtable::get_keys(c, &args)
        .map(|keys| {
            keys.into_iter()
                .map(|k| (k.pos, key_flag_bits(k.flags)))
                .collect()
        })
        .unwrap_or_default()
}

/// A key spec's flag names (Redis's CMD_KEY_* as COMMAND INFO spells them) as [`kf`] bits.
fn key_flag_bits(flags: &[&str]) -> u16 {
    flags.iter().fold(0, |bits, f| {
        bits | match *f {
            "RO" => kf::RO,
            "RW" => kf::RW,
            "OW" => kf::OW,
            "RM" => kf::RM,
            "access" => kf::ACCESS,
            "update" => kf::UPDATE,
            "insert" => kf::INSERT,
            "delete" => kf::DELETE,
            "not_key" => kf::NOT_KEY,
            "incomplete" => kf::INCOMPLETE,
            "variable_flags" => kf::VARIABLE_FLAGS,
            _ => 0,
        }
    })
}

/// getChannelsFromCommand: (argument index, is_pattern) of every channel the command
/// publishes or subscribes to (UNSUBSCRIBE and PUBSUB queries are not checked).
pub fn channels_of(req: &Request<'_>) -> Vec<(usize, bool)> {
    let argc = req.args.len();
    match rcmd(req.id).name {
        "publish" | "spublish" if argc > 1 => vec![(1, false)],
        "subscribe" | "ssubscribe" => (1..argc).map(|i| (i, false)).collect(),
        "psubscribe" => (1..argc).map(|i| (i, true)).collect(),
        _ => Vec::new(),
    }
}

/// A user's permissions: the root selector and the `(...)` ones.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Perms {
    /// Root first.
    pub selectors: Vec<Selector>,
    /// Some selector allows every command, key and channel: the request path skips the
    /// check.
    pub unrestricted: bool,
}

impl Perms {
    pub fn new(allchannels_default: bool) -> Perms {
        Perms {
            selectors: vec![Selector::new(true, allchannels_default)],
            unrestricted: false,
        }
    }

    /// `~* &* +@all`: the default user's and a permissive tenant's.
    pub fn all() -> Perms {
        let mut p = Perms::new(true);
        for r in [&b"~*"[..], b"+@all"] {
            let _ = p.selectors[0].apply(r);
        }
        p.refresh();
        p
    }

    pub fn root(&mut self) -> &mut Selector {
        &mut self.selectors[0]
    }

    pub fn refresh(&mut self) {
        self.unrestricted = self.selectors.iter().any(Selector::unrestricted);
    }

    /// `clearselectors`.
    pub fn clear_selectors(&mut self) {
        self.selectors.truncate(1);
    }

    /// A `(...)` rule: a new selector from its space-separated rules.
    pub fn add_selector(&mut self, op: &[u8], allchannels_default: bool) -> Result<(), RuleError> {
        let inner = &op[1..op.len() - 1];
        let mut s = Selector::new(false, allchannels_default);
        for part in split_args(inner).ok_or(RuleError::Syntax)? {
            s.apply(&part)?;
        }
        self.selectors.push(s);
        Ok(())
    }

    /// ACLCheckAllUserCommandPerm: Ok if any selector allows the request; otherwise the
    /// most relevant failure (channels over keys over the command; the last argument).
    pub fn check(&self, req: &Request<'_>) -> Result<(), Denied> {
        if self.unrestricted {
            return Ok(());
        }
        let keys = if self.selectors.iter().all(|s| s.flags & ALLKEYS != 0) {
            Vec::new()
        } else {
            keys_of(req)
        };
        let mut worst = Denied::Command;
        for s in &self.selectors {
            match s.check(req, &keys) {
                Ok(()) => return Ok(()),
                Err(d) => {
                    if d.rank() > worst.rank() {
                        worst = d;
                    }
                }
            }
        }
        Err(worst)
    }

    /// ACLUserCheckCmdWithUnrestrictedKeyAccess for read access: some selector allows
    /// the request and may read every key (`allkeys`, `~*` or `%R~*`). SORT's BY and GET
    /// read keys no key spec names, so Redis lets only such a user use them.
    pub fn reads_every_key(&self, req: &Request<'_>) -> bool {
        if self.unrestricted {
            return true;
        }
        let keys = keys_of(req);
        self.selectors.iter().any(|s| {
            s.check(req, &keys).is_ok()
                && (s.flags & ALLKEYS != 0
                    || s.patterns
                        .iter()
                        .any(|p| p.perm & PERM_R != 0 && p.pattern == b"*"))
        })
    }

    /// Whether the subscriptions of a connection stay allowed (ACLKillPubsubClientsIfNeeded
    /// checks them against the union of every selector's channels).
    pub fn subscription_allowed(&self, name: &[u8], is_pattern: bool) -> bool {
        self.selectors
            .iter()
            .any(|s| s.flags & ALLCHANNELS != 0 || channel_allowed(&s.channels, name, is_pattern))
    }

    /// The `selectors` part of ACL LIST.
    pub fn describe(&self) -> String {
        let mut s = String::new();
        for (i, sel) in self.selectors.iter().enumerate() {
            if i == 0 {
                s.push_str(&sel.describe());
            } else {
                s.push_str(" (");
                s.push_str(&sel.describe());
                s.push(')');
            }
        }
        s
    }
}

/// sdssplitargs: splits on spaces, honouring "double" (with \x escapes) and 'single'
/// quotes; None on unbalanced quotes.
pub fn split_args(line: &[u8]) -> Option<Vec<Vec<u8>>> {
    let mut out = Vec::new();
    let mut i = 0;
    let n = line.len();
    loop {
        while i < n && line[i].is_ascii_whitespace() {
            i += 1;
        }
        if i >= n {
            return Some(out);
        }
        let mut cur = Vec::new();
        let (mut inq, mut insq) = (false, false);
        loop {
            if inq {
                if i >= n {
                    return None;
                }
                if line[i] == b'\\'
                    && i + 3 < n
                    && line[i + 1] == b'x'
                    && line[i + 2].is_ascii_hexdigit()
                    && line[i + 3].is_ascii_hexdigit()
                {
                    let h = std::str::from_utf8(&line[i + 2..i + 4]).ok()?;
                    cur.push(u8::from_str_radix(h, 16).ok()?);
                    i += 3;
                } else if line[i] == b'\\' && i + 1 < n {
                    i += 1;
                    cur.push(match line[i] {
                        b'n' => b'\n',
                        b'r' => b'\r',
                        b't' => b'\t',
                        b'b' => 8,
                        b'a' => 7,
                        c => c,
                    });
                } else if line[i] == b'"' {
                    if i + 1 < n && !line[i + 1].is_ascii_whitespace() {
                        return None;
                    }
                    inq = false;
                    i += 1;
                    break;
                } else {
                    cur.push(line[i]);
                }
            } else if insq {
                if i >= n {
                    return None;
                }
                if line[i] == b'\\' && i + 1 < n && line[i + 1] == b'\'' {
                    i += 1;
                    cur.push(b'\'');
                } else if line[i] == b'\'' {
                    if i + 1 < n && !line[i + 1].is_ascii_whitespace() {
                        return None;
                    }
                    insq = false;
                    i += 1;
                    break;
                } else {
                    cur.push(line[i]);
                }
            } else {
                if i >= n {
                    break;
                }
                match line[i] {
                    b' ' | b'\n' | b'\r' | b'\t' | 0 => break,
                    b'"' => inq = true,
                    b'\'' => insq = true,
                    c => cur.push(c),
                }
            }
            i += 1;
        }
        let _ = (inq, insq);
        out.push(cur);
    }
}

/// ACLMergeSelectorArguments: joins `(` ... `)` spread over several arguments into one
/// rule. Err(index of the unclosed opening argument).
pub fn merge_selector_args(args: &[&[u8]]) -> Result<Vec<Vec<u8>>, usize> {
    let mut out = Vec::new();
    let mut open: Option<(usize, Vec<u8>)> = None;
    for (j, &op) in args.iter().enumerate() {
        if let Some((_, sel)) = &mut open {
            sel.push(b' ');
            sel.extend_from_slice(op);
            if op.last() == Some(&b')') {
                out.push(std::mem::take(sel));
                open = None;
            }
            continue;
        }
        if op.first() == Some(&b'(') && op.last() != Some(&b')') {
            open = Some((j, op.to_vec()));
            continue;
        }
        if op.first() == Some(&b'(') && op.len() == 1 {
            open = Some((j, op.to_vec()));
            continue;
        }
        out.push(op.to_vec());
    }
    match open {
        Some((j, _)) => Err(j),
        None => Ok(out),
    }
}

/// ACL LOG (acl.c ACLLogEntry): failed checks and authentications, newest first, with
/// entries of the same reason, context, object and user within 60 s grouped.
pub struct AclLog {
    entries: parking_lot::Mutex<std::collections::VecDeque<LogEntry>>,
}

#[derive(Debug, Clone)]
pub struct LogEntry {
    pub count: u64,
    pub reason: &'static str,
    pub context: &'static str,
    pub object: Vec<u8>,
    pub username: String,
    pub ctime_ms: u64,
    pub client_info: String,
}

/// ACL_LOG_GROUPING_MAX_TIME_DELTA.
const GROUPING_MS: u64 = 60_000;

impl Default for AclLog {
    fn default() -> Self {
        AclLog {
            entries: parking_lot::Mutex::new(std::collections::VecDeque::new()),
        }
    }
}

impl AclLog {
    pub fn add(&self, mut e: LogEntry, max_len: usize) {
        let mut g = self.entries.lock();
        if let Some(pos) = g.iter().position(|o| {
            o.reason == e.reason
                && o.context == e.context
                && o.object == e.object
                && o.username == e.username
                && e.ctime_ms.saturating_sub(o.ctime_ms) < GROUPING_MS
        }) {
            if let Some(old) = g.remove(pos) {
                e.count = old.count + 1;
            }
        }
        g.push_front(e);
        g.truncate(max_len);
    }

    pub fn entries(&self, n: usize) -> Vec<LogEntry> {
        self.entries.lock().iter().take(n).cloned().collect()
    }

    pub fn reset(&self) {
        self.entries.lock().clear();
    }

    pub fn truncate(&self, max_len: usize) {
        self.entries.lock().truncate(max_len);
    }
}

/// ACL GENPASS: `bits` random bits as lowercase hex (rounded up to a nibble).
pub fn genpass(bits: usize) -> String {
    use rand::RngCore;
    let chars = bits.div_ceil(4);
    let mut bytes = vec![0u8; chars.div_ceil(2)];
    rand::rngs::OsRng.fill_bytes(&mut bytes);
    let mut s = String::with_capacity(chars + 1);
    for b in bytes {
        use std::fmt::Write;
        let _ = write!(s, "{b:02x}");
    }
    s.truncate(chars);
    s
}

/// Commands (full names) of a category, in table order, restricted by `served`.
pub fn commands_in(bit: u32, served: impl Fn(&str) -> bool) -> Vec<&'static str> {
    rcmds()
        .iter()
        .filter(|c| c.cats & bit != 0 && served(c.name))
        .map(|c| c.name)
        .collect()
}

#[cfg(test)]
mod tests;
