//! The command table: names, arities, flags and key positions as Redis 7 declares them.
//! It drives dispatch (a `match` on the upper-cased name, no string map), arity checks,
//! the denyoom / no-auth checks, and the COMMAND replies that clients use for hints and
//! cluster key routing.

/// Command flag bits (a subset of Redis's CMD_*).
pub const WRITE: u32 = 1;
pub const READONLY: u32 = 1 << 1;
pub const DENYOOM: u32 = 1 << 2;
pub const ADMIN: u32 = 1 << 3;
pub const NOSCRIPT: u32 = 1 << 4;
pub const LOADING: u32 = 1 << 5;
pub const STALE: u32 = 1 << 6;
pub const FAST: u32 = 1 << 7;
pub const NO_AUTH: u32 = 1 << 8;
pub const ALLOW_BUSY: u32 = 1 << 9;
/// Refused inside MULTI ("Command not allowed inside a transaction").
pub const NO_MULTI: u32 = 1 << 10;
pub const PUBSUB: u32 = 1 << 11;
/// Redis's CMD_MAY_REPLICATE, which COMMAND does not list: a command that is not a write
/// but may still be propagated (PFCOUNT stores the cardinality it computed; PUBLISH and
/// SPUBLISH reach replicas). Refused in read-only scripts and held by CLIENT PAUSE WRITE,
/// like a write.
pub const MAY_REPLICATE: u32 = 1 << 12;

const FLAG_NAMES: &[(u32, &str)] = &[
    (WRITE, "write"),
    (READONLY, "readonly"),
    (DENYOOM, "denyoom"),
    (ADMIN, "admin"),
    (PUBSUB, "pubsub"),
    (NOSCRIPT, "noscript"),
    (LOADING, "loading"),
    (STALE, "stale"),
    (FAST, "fast"),
    (NO_AUTH, "no_auth"),
    (ALLOW_BUSY, "allow_busy"),
    (NO_MULTI, "no_multi"),
];

/// Flag names of a flag set, in COMMAND's order.
pub fn flag_names(flags: u32) -> impl Iterator<Item = &'static str> {
    FLAG_NAMES
        .iter()
        .filter(move |(bit, _)| flags & bit != 0)
        .map(|&(_, n)| n)
}

/// One command (or subcommand) as COMMAND INFO describes it.
#[derive(Debug)]
pub struct CommandSpec {
    pub cmd: Cmd,
    /// Lower case; for subcommands `container|sub`.
    pub name: &'static str,
    /// Positive: exact argument count including the name; negative: at least -arity.
    pub arity: i32,
    pub flags: u32,
    pub first_key: i32,
    pub last_key: i32,
    pub step: i32,
    pub group: &'static str,
    pub summary: &'static str,
    pub subcommands: &'static [SubSpec],
}

/// A subcommand of a container command (CONFIG GET, CLIENT LIST, ...).
#[derive(Debug)]
pub struct SubSpec {
    /// `container|sub`, lower case.
    pub name: &'static str,
    pub arity: i32,
    pub flags: u32,
    pub summary: &'static str,
}

impl SubSpec {
    /// The part after `|`.
    pub fn short(&self) -> &'static str {
        self.name.split_once('|').map_or(self.name, |(_, s)| s)
    }
}

impl CommandSpec {
    /// Whether `argc` (including the command name) satisfies the arity.
    pub fn arity_ok(&self, argc: usize) -> bool {
        arity_ok(self.arity, argc)
    }

    /// The subcommand spec for `sub` (case-insensitive), if any.
    pub fn sub(&self, sub: &[u8]) -> Option<&'static SubSpec> {
        self.subcommands
            .iter()
            .find(|s| s.short().as_bytes().eq_ignore_ascii_case(sub))
    }
}

pub fn arity_ok(arity: i32, argc: usize) -> bool {
    if arity >= 0 {
        argc == arity as usize
    } else {
        argc >= (-arity) as usize
    }
}

macro_rules! commands {
    ($( $variant:ident $upper:literal $name:literal $arity:literal [$($flag:ident)|*] $first:literal $last:literal $step:literal $group:literal $summary:literal $subs:expr ;)*) => {
        /// Every command Augur implements.
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub enum Cmd { $($variant),* }

        /// Indexed by `Cmd as usize`.
        pub static COMMANDS: &[CommandSpec] = &[
            $(CommandSpec {
                cmd: Cmd::$variant,
                name: $name,
                arity: $arity,
                flags: 0 $(| $flag)*,
                first_key: $first,
                last_key: $last,
                step: $step,
                group: $group,
                summary: $summary,
                subcommands: $subs,
            }),*
        ];

        /// Finds a command by its upper-cased name.
        #[inline]
        pub fn lookup(upper: &[u8]) -> Option<&'static CommandSpec> {
            match upper {
                $($upper => Some(&COMMANDS[Cmd::$variant as usize]),)*
                _ => None,
            }
        }
    };
}

const NONE: &[SubSpec] = &[];

commands! {
    Get b"GET" "get" 2 [READONLY|FAST] 1 1 1 "string" "Returns the string value of a key." NONE;
    Set b"SET" "set" -3 [WRITE|DENYOOM] 1 1 1 "string" "Sets the string value of a key, ignoring its type. The key is created if it doesn't exist." NONE;
    SetNx b"SETNX" "setnx" 3 [WRITE|DENYOOM|FAST] 1 1 1 "string" "Set the string value of a key only when the key doesn't exist." NONE;
    SetEx b"SETEX" "setex" 4 [WRITE|DENYOOM] 1 1 1 "string" "Sets the string value and expiration time of a key. Creates the key if it doesn't exist." NONE;
    PSetEx b"PSETEX" "psetex" 4 [WRITE|DENYOOM] 1 1 1 "string" "Sets both string value and expiration time in milliseconds of a key. The key is created if it doesn't exist." NONE;
    GetSet b"GETSET" "getset" 3 [WRITE|DENYOOM|FAST] 1 1 1 "string" "Returns the previous string value of a key after setting it to a new value." NONE;
    GetDel b"GETDEL" "getdel" 2 [WRITE|FAST] 1 1 1 "string" "Returns the string value of a key after deleting the key." NONE;
    GetEx b"GETEX" "getex" -2 [WRITE|FAST] 1 1 1 "string" "Returns the string value of a key after setting its expiration time." NONE;
    MGet b"MGET" "mget" -2 [READONLY|FAST] 1 -1 1 "string" "Atomically returns the string values of one or more keys." NONE;
    MSet b"MSET" "mset" -3 [WRITE|DENYOOM] 1 -1 2 "string" "Atomically creates or modifies the string values of one or more keys." NONE;
    MSetNx b"MSETNX" "msetnx" -3 [WRITE|DENYOOM] 1 -1 2 "string" "Atomically modifies the string values of one or more keys only when all keys don't exist." NONE;
    Del b"DEL" "del" -2 [WRITE] 1 -1 1 "generic" "Deletes one or more keys." NONE;
    Unlink b"UNLINK" "unlink" -2 [WRITE|FAST] 1 -1 1 "generic" "Asynchronously deletes one or more keys." NONE;
    Exists b"EXISTS" "exists" -2 [READONLY|FAST] 1 -1 1 "generic" "Determines whether one or more keys exist." NONE;
    Touch b"TOUCH" "touch" -2 [READONLY|FAST] 1 -1 1 "generic" "Returns the number of existing keys out of those specified after updating the time they were last accessed." NONE;
    Expire b"EXPIRE" "expire" -3 [WRITE|FAST] 1 1 1 "generic" "Sets the expiration time of a key in seconds." NONE;
    PExpire b"PEXPIRE" "pexpire" -3 [WRITE|FAST] 1 1 1 "generic" "Sets the expiration time of a key in milliseconds." NONE;
    ExpireAt b"EXPIREAT" "expireat" -3 [WRITE|FAST] 1 1 1 "generic" "Sets the expiration time of a key to a Unix timestamp." NONE;
    PExpireAt b"PEXPIREAT" "pexpireat" -3 [WRITE|FAST] 1 1 1 "generic" "Sets the expiration time of a key to a Unix milliseconds timestamp." NONE;
    Ttl b"TTL" "ttl" 2 [READONLY|FAST] 1 1 1 "generic" "Returns the expiration time in seconds of a key." NONE;
    PTtl b"PTTL" "pttl" 2 [READONLY|FAST] 1 1 1 "generic" "Returns the expiration time in milliseconds of a key." NONE;
    Persist b"PERSIST" "persist" 2 [WRITE|FAST] 1 1 1 "generic" "Removes the expiration time of a key." NONE;
    Type b"TYPE" "type" 2 [READONLY|FAST] 1 1 1 "generic" "Determines the type of value stored at a key." NONE;
    Incr b"INCR" "incr" 2 [WRITE|DENYOOM|FAST] 1 1 1 "string" "Increments the integer value of a key by one. Uses 0 as initial value if the key doesn't exist." NONE;
    IncrBy b"INCRBY" "incrby" 3 [WRITE|DENYOOM|FAST] 1 1 1 "string" "Increments the integer value of a key by a number. Uses 0 as initial value if the key doesn't exist." NONE;
    Decr b"DECR" "decr" 2 [WRITE|DENYOOM|FAST] 1 1 1 "string" "Decrements the integer value of a key by one. Uses 0 as initial value if the key doesn't exist." NONE;
    DecrBy b"DECRBY" "decrby" 3 [WRITE|DENYOOM|FAST] 1 1 1 "string" "Decrements a number from the integer value of a key. Uses 0 as initial value if the key doesn't exist." NONE;
    IncrByFloat b"INCRBYFLOAT" "incrbyfloat" 3 [WRITE|DENYOOM|FAST] 1 1 1 "string" "Increment the floating point value of a key by a number. Uses 0 as initial value if the key doesn't exist." NONE;
    Append b"APPEND" "append" 3 [WRITE|DENYOOM|FAST] 1 1 1 "string" "Appends a string to the value of a key. Creates the key if it doesn't exist." NONE;
    StrLen b"STRLEN" "strlen" 2 [READONLY|FAST] 1 1 1 "string" "Returns the length of a string value." NONE;
    GetRange b"GETRANGE" "getrange" 4 [READONLY] 1 1 1 "string" "Returns a substring of the string stored at a key." NONE;
    SetRange b"SETRANGE" "setrange" 4 [WRITE|DENYOOM] 1 1 1 "string" "Overwrites a part of a string value with another by an offset. Creates the key if it doesn't exist." NONE;
    Keys b"KEYS" "keys" 2 [READONLY] 0 0 0 "generic" "Returns all key names that match a pattern." NONE;
    Scan b"SCAN" "scan" -2 [READONLY] 0 0 0 "generic" "Iterates over the key names in the database." NONE;
    RandomKey b"RANDOMKEY" "randomkey" 1 [READONLY] 0 0 0 "generic" "Returns a random key name from the database." NONE;
    DbSize b"DBSIZE" "dbsize" 1 [READONLY|FAST] 0 0 0 "server" "Returns the number of keys in the database." NONE;
    FlushDb b"FLUSHDB" "flushdb" -1 [WRITE] 0 0 0 "server" "Remove all keys from the current database." NONE;
    FlushAll b"FLUSHALL" "flushall" -1 [WRITE] 0 0 0 "server" "Removes all keys from all databases." NONE;
    Ping b"PING" "ping" -1 [FAST] 0 0 0 "connection" "Returns the server's liveliness response." NONE;
    Echo b"ECHO" "echo" 2 [FAST] 0 0 0 "connection" "Returns the given string." NONE;
    Hello b"HELLO" "hello" -1 [NOSCRIPT|LOADING|STALE|FAST|NO_AUTH|ALLOW_BUSY] 0 0 0 "connection" "Handshakes with the Redis server." NONE;
    Auth b"AUTH" "auth" -2 [NOSCRIPT|LOADING|STALE|FAST|NO_AUTH|ALLOW_BUSY] 0 0 0 "connection" "Authenticates the connection." NONE;
    Quit b"QUIT" "quit" -1 [NOSCRIPT|LOADING|STALE|FAST|NO_AUTH|ALLOW_BUSY] 0 0 0 "connection" "Closes the connection." NONE;
    Select b"SELECT" "select" 2 [LOADING|STALE|FAST] 0 0 0 "connection" "Changes the selected database." NONE;
    Time b"TIME" "time" 1 [LOADING|STALE|FAST] 0 0 0 "server" "Returns the server time." NONE;
    Info b"INFO" "info" -1 [LOADING|STALE] 0 0 0 "server" "Returns information and statistics about the server." NONE;
    Config b"CONFIG" "config" -2 [] 0 0 0 "server" "A container for server configuration commands." CONFIG_SUBS;
    Command b"COMMAND" "command" -1 [LOADING|STALE] 0 0 0 "server" "Returns detailed information about all commands." COMMAND_SUBS;
    Client b"CLIENT" "client" -2 [] 0 0 0 "connection" "A container for client connection commands." CLIENT_SUBS;
    Memory b"MEMORY" "memory" -2 [] 0 0 0 "server" "A container for memory diagnostics commands." MEMORY_SUBS;
    SlowLog b"SLOWLOG" "slowlog" -2 [] 0 0 0 "server" "A container for slow log commands." SLOWLOG_SUBS;
    Latency b"LATENCY" "latency" -2 [] 0 0 0 "server" "A container for latency diagnostics commands." LATENCY_SUBS;
    Object b"OBJECT" "object" -2 [] 0 0 0 "generic" "A container for object introspection commands." OBJECT_SUBS;
    Acl b"ACL" "acl" -2 [] 0 0 0 "server" "A container for Access List Control commands." ACL_SUBS;
    Tenant b"TENANT" "tenant" -2 [] 0 0 0 "server" "A container for Augur's tenant commands: limits, statistics and miss-ratio curves of each tenant (ACL user)." TENANT_SUBS;
    Multi b"MULTI" "multi" 1 [NOSCRIPT|LOADING|STALE|FAST|ALLOW_BUSY] 0 0 0 "transactions" "Starts a transaction." NONE;
    Exec b"EXEC" "exec" 1 [NOSCRIPT|LOADING|STALE] 0 0 0 "transactions" "Executes all commands in a transaction." NONE;
    Discard b"DISCARD" "discard" 1 [NOSCRIPT|LOADING|STALE|FAST|ALLOW_BUSY] 0 0 0 "transactions" "Discards a transaction." NONE;
    Watch b"WATCH" "watch" -2 [NOSCRIPT|LOADING|STALE|FAST|ALLOW_BUSY] 1 -1 1 "transactions" "Monitors changes to keys to determine the execution of a transaction." NONE;
    Unwatch b"UNWATCH" "unwatch" 1 [NOSCRIPT|LOADING|STALE|FAST|ALLOW_BUSY] 0 0 0 "transactions" "Forgets about watched keys of a transaction." NONE;
    Reset b"RESET" "reset" 1 [NOSCRIPT|LOADING|STALE|FAST|NO_AUTH|ALLOW_BUSY] 0 0 0 "connection" "Resets the connection." NONE;
    Function b"FUNCTION" "function" -2 [] 0 0 0 "scripting" "A container for function commands." FUNCTION_SUBS;
    Shutdown b"SHUTDOWN" "shutdown" -1 [ADMIN|NOSCRIPT|LOADING|STALE|NO_MULTI|ALLOW_BUSY] 0 0 0 "server" "Synchronously saves the database(s) to disk and shuts down the Redis server." NONE;
    HSet b"HSET" "hset" -4 [WRITE|DENYOOM|FAST] 1 1 1 "hash" "Creates or modifies the value of a field in a hash." NONE;
    HSetNx b"HSETNX" "hsetnx" 4 [WRITE|DENYOOM|FAST] 1 1 1 "hash" "Sets the value of a field in a hash only when the field doesn't exist." NONE;
    HGet b"HGET" "hget" 3 [READONLY|FAST] 1 1 1 "hash" "Returns the value of a field in a hash." NONE;
    HMSet b"HMSET" "hmset" -4 [WRITE|DENYOOM|FAST] 1 1 1 "hash" "Sets the values of multiple fields." NONE;
    HMGet b"HMGET" "hmget" -3 [READONLY|FAST] 1 1 1 "hash" "Returns the values of all fields in a hash." NONE;
    HIncrBy b"HINCRBY" "hincrby" 4 [WRITE|DENYOOM|FAST] 1 1 1 "hash" "Increments the integer value of a field in a hash by a number. Uses 0 as initial value if the field doesn't exist." NONE;
    HIncrByFloat b"HINCRBYFLOAT" "hincrbyfloat" 4 [WRITE|DENYOOM|FAST] 1 1 1 "hash" "Increments the floating point value of a field by a number. Uses 0 as initial value if the field doesn't exist." NONE;
    HDel b"HDEL" "hdel" -3 [WRITE|FAST] 1 1 1 "hash" "Deletes one or more fields and their values from a hash. Deletes the hash if no fields remain." NONE;
    HLen b"HLEN" "hlen" 2 [READONLY|FAST] 1 1 1 "hash" "Returns the number of fields in a hash." NONE;
    HStrLen b"HSTRLEN" "hstrlen" 3 [READONLY|FAST] 1 1 1 "hash" "Returns the length of the value of a field." NONE;
    HKeys b"HKEYS" "hkeys" 2 [READONLY] 1 1 1 "hash" "Returns all fields in a hash." NONE;
    HVals b"HVALS" "hvals" 2 [READONLY] 1 1 1 "hash" "Returns all values in a hash." NONE;
    HGetAll b"HGETALL" "hgetall" 2 [READONLY] 1 1 1 "hash" "Returns all fields and values in a hash." NONE;
    HExists b"HEXISTS" "hexists" 3 [READONLY|FAST] 1 1 1 "hash" "Determines whether a field exists in a hash." NONE;
    HScan b"HSCAN" "hscan" -3 [READONLY] 1 1 1 "hash" "Iterates over fields and values of a hash." NONE;
    HRandField b"HRANDFIELD" "hrandfield" -2 [READONLY] 1 1 1 "hash" "Returns one or more random fields from a hash." NONE;
    SAdd b"SADD" "sadd" -3 [WRITE|DENYOOM|FAST] 1 1 1 "set" "Adds one or more members to a set. Creates the key if it doesn't exist." NONE;
    SRem b"SREM" "srem" -3 [WRITE|FAST] 1 1 1 "set" "Removes one or more members from a set. Deletes the set if the last member was removed." NONE;
    SMove b"SMOVE" "smove" 4 [WRITE|FAST] 1 2 1 "set" "Moves a member from one set to another." NONE;
    SIsMember b"SISMEMBER" "sismember" 3 [READONLY|FAST] 1 1 1 "set" "Determines whether a member belongs to a set." NONE;
    SMIsMember b"SMISMEMBER" "smismember" -3 [READONLY|FAST] 1 1 1 "set" "Determines whether multiple members belong to a set." NONE;
    SCard b"SCARD" "scard" 2 [READONLY|FAST] 1 1 1 "set" "Returns the number of members in a set." NONE;
    SPop b"SPOP" "spop" -2 [WRITE|FAST] 1 1 1 "set" "Returns one or more random members from a set after removing them. Deletes the set if the last member was popped." NONE;
    SRandMember b"SRANDMEMBER" "srandmember" -2 [READONLY] 1 1 1 "set" "Get one or multiple random members from a set" NONE;
    SInter b"SINTER" "sinter" -2 [READONLY] 1 -1 1 "set" "Returns the intersect of multiple sets." NONE;
    SInterCard b"SINTERCARD" "sintercard" -3 [READONLY] 0 0 0 "set" "Returns the number of members of the intersect of multiple sets." NONE;
    SInterStore b"SINTERSTORE" "sinterstore" -3 [WRITE|DENYOOM] 1 -1 1 "set" "Stores the intersect of multiple sets in a key." NONE;
    SUnion b"SUNION" "sunion" -2 [READONLY] 1 -1 1 "set" "Returns the union of multiple sets." NONE;
    SUnionStore b"SUNIONSTORE" "sunionstore" -3 [WRITE|DENYOOM] 1 -1 1 "set" "Stores the union of multiple sets in a key." NONE;
    SDiff b"SDIFF" "sdiff" -2 [READONLY] 1 -1 1 "set" "Returns the difference of multiple sets." NONE;
    SDiffStore b"SDIFFSTORE" "sdiffstore" -3 [WRITE|DENYOOM] 1 -1 1 "set" "Stores the difference of multiple sets in a key." NONE;
    SMembers b"SMEMBERS" "smembers" 2 [READONLY] 1 1 1 "set" "Returns all members of a set." NONE;
    SScan b"SSCAN" "sscan" -3 [READONLY] 1 1 1 "set" "Iterates over members of a set." NONE;
    Sort b"SORT" "sort" -2 [WRITE|DENYOOM] 1 1 1 "generic" "Sorts the elements in a list, a set, or a sorted set, optionally storing the result." NONE;
    SortRo b"SORT_RO" "sort_ro" -2 [READONLY] 1 1 1 "generic" "Returns the sorted elements of a list, a set, or a sorted set." NONE;
    LPush b"LPUSH" "lpush" -3 [WRITE|DENYOOM|FAST] 1 1 1 "list" "Prepends one or more elements to a list. Creates the key if it doesn't exist." NONE;
    RPush b"RPUSH" "rpush" -3 [WRITE|DENYOOM|FAST] 1 1 1 "list" "Appends one or more elements to a list. Creates the key if it doesn't exist." NONE;
    LPushX b"LPUSHX" "lpushx" -3 [WRITE|DENYOOM|FAST] 1 1 1 "list" "Prepends one or more elements to a list only when the list exists." NONE;
    RPushX b"RPUSHX" "rpushx" -3 [WRITE|DENYOOM|FAST] 1 1 1 "list" "Appends an element to a list only when the list exists." NONE;
    LInsert b"LINSERT" "linsert" 5 [WRITE|DENYOOM] 1 1 1 "list" "Inserts an element before or after another element in a list." NONE;
    LLen b"LLEN" "llen" 2 [READONLY|FAST] 1 1 1 "list" "Returns the length of a list." NONE;
    LIndex b"LINDEX" "lindex" 3 [READONLY] 1 1 1 "list" "Returns an element from a list by its index." NONE;
    LSet b"LSET" "lset" 4 [WRITE|DENYOOM] 1 1 1 "list" "Sets the value of an element in a list by its index." NONE;
    LRange b"LRANGE" "lrange" 4 [READONLY] 1 1 1 "list" "Returns a range of elements from a list." NONE;
    LTrim b"LTRIM" "ltrim" 4 [WRITE] 1 1 1 "list" "Removes elements from both ends a list. Deletes the list if all elements were trimmed." NONE;
    LPop b"LPOP" "lpop" -2 [WRITE|FAST] 1 1 1 "list" "Returns the first elements in a list after removing it. Deletes the list if the last element was popped." NONE;
    RPop b"RPOP" "rpop" -2 [WRITE|FAST] 1 1 1 "list" "Returns and removes the last elements of a list. Deletes the list if the last element was popped." NONE;
    LRem b"LREM" "lrem" 4 [WRITE] 1 1 1 "list" "Removes elements from a list. Deletes the list if the last element was removed." NONE;
    LPos b"LPOS" "lpos" -3 [READONLY] 1 1 1 "list" "Returns the index of matching elements in a list." NONE;
    LMove b"LMOVE" "lmove" 5 [WRITE|DENYOOM] 1 2 1 "list" "Returns an element after popping it from one list and pushing it to another. Deletes the list if the last element was moved." NONE;
    RPopLPush b"RPOPLPUSH" "rpoplpush" 3 [WRITE|DENYOOM] 1 2 1 "list" "Returns the last element of a list after removing and pushing it to another list. Deletes the list if the last element was popped." NONE;
    LMPop b"LMPOP" "lmpop" -4 [WRITE] 0 0 0 "list" "Returns multiple elements from a list after removing them. Deletes the list if the last element was popped." NONE;
    BLPop b"BLPOP" "blpop" -3 [WRITE|NOSCRIPT] 1 -2 1 "list" "Removes and returns the first element in a list. Blocks until an element is available otherwise. Deletes the list if the last element was popped." NONE;
    BRPop b"BRPOP" "brpop" -3 [WRITE|NOSCRIPT] 1 -2 1 "list" "Removes and returns the last element in a list. Blocks until an element is available otherwise. Deletes the list if the last element was popped." NONE;
    BLMove b"BLMOVE" "blmove" 6 [WRITE|DENYOOM|NOSCRIPT] 1 2 1 "list" "Pops an element from a list, pushes it to another list and returns it. Blocks until an element is available otherwise. Deletes the list if the last element was moved." NONE;
    BRPopLPush b"BRPOPLPUSH" "brpoplpush" 4 [WRITE|DENYOOM|NOSCRIPT] 1 2 1 "list" "Pops an element from a list, pushes it to another list and returns it. Block until an element is available otherwise. Deletes the list if the last element was popped." NONE;
    BLMPop b"BLMPOP" "blmpop" -5 [WRITE] 0 0 0 "list" "Pops the first element from one of multiple lists. Blocks until an element is available otherwise. Deletes the list if the last element was popped." NONE;
    ZAdd b"ZADD" "zadd" -4 [WRITE|DENYOOM|FAST] 1 1 1 "sorted-set" "Add one or more members to a sorted set, or update its score if it already exists" NONE;
    ZIncrBy b"ZINCRBY" "zincrby" 4 [WRITE|DENYOOM|FAST] 1 1 1 "sorted-set" "Increment the score of a member in a sorted set" NONE;
    ZRem b"ZREM" "zrem" -3 [WRITE|FAST] 1 1 1 "sorted-set" "Remove one or more members from a sorted set" NONE;
    ZCard b"ZCARD" "zcard" 2 [READONLY|FAST] 1 1 1 "sorted-set" "Get the number of members in a sorted set" NONE;
    ZScore b"ZSCORE" "zscore" 3 [READONLY|FAST] 1 1 1 "sorted-set" "Get the score associated with the given member in a sorted set" NONE;
    ZMScore b"ZMSCORE" "zmscore" -3 [READONLY|FAST] 1 1 1 "sorted-set" "Get the score associated with the given members in a sorted set" NONE;
    ZCount b"ZCOUNT" "zcount" 4 [READONLY|FAST] 1 1 1 "sorted-set" "Count the members in a sorted set with scores within the given values" NONE;
    ZLexCount b"ZLEXCOUNT" "zlexcount" 4 [READONLY|FAST] 1 1 1 "sorted-set" "Count the number of members in a sorted set between a given lexicographical range" NONE;
    ZRank b"ZRANK" "zrank" 3 [READONLY|FAST] 1 1 1 "sorted-set" "Determine the index of a member in a sorted set" NONE;
    ZRevRank b"ZREVRANK" "zrevrank" 3 [READONLY|FAST] 1 1 1 "sorted-set" "Determine the index of a member in a sorted set, with scores ordered from high to low" NONE;
    ZRange b"ZRANGE" "zrange" -4 [READONLY] 1 1 1 "sorted-set" "Return a range of members in a sorted set" NONE;
    ZRangeStore b"ZRANGESTORE" "zrangestore" -5 [WRITE|DENYOOM] 1 2 1 "sorted-set" "Store a range of members from sorted set into another key" NONE;
    ZRevRange b"ZREVRANGE" "zrevrange" -4 [READONLY] 1 1 1 "sorted-set" "Return a range of members in a sorted set, by index, with scores ordered from high to low" NONE;
    ZRangeByScore b"ZRANGEBYSCORE" "zrangebyscore" -4 [READONLY] 1 1 1 "sorted-set" "Return a range of members in a sorted set, by score" NONE;
    ZRevRangeByScore b"ZREVRANGEBYSCORE" "zrevrangebyscore" -4 [READONLY] 1 1 1 "sorted-set" "Return a range of members in a sorted set, by score, with scores ordered from high to low" NONE;
    ZRangeByLex b"ZRANGEBYLEX" "zrangebylex" -4 [READONLY] 1 1 1 "sorted-set" "Return a range of members in a sorted set, by lexicographical range" NONE;
    ZRevRangeByLex b"ZREVRANGEBYLEX" "zrevrangebylex" -4 [READONLY] 1 1 1 "sorted-set" "Return a range of members in a sorted set, by lexicographical range, ordered from higher to lower strings." NONE;
    ZRemRangeByRank b"ZREMRANGEBYRANK" "zremrangebyrank" 4 [WRITE] 1 1 1 "sorted-set" "Remove all members in a sorted set within the given indexes" NONE;
    ZRemRangeByScore b"ZREMRANGEBYSCORE" "zremrangebyscore" 4 [WRITE] 1 1 1 "sorted-set" "Remove all members in a sorted set within the given scores" NONE;
    ZRemRangeByLex b"ZREMRANGEBYLEX" "zremrangebylex" 4 [WRITE] 1 1 1 "sorted-set" "Remove all members in a sorted set between the given lexicographical range" NONE;
    ZPopMin b"ZPOPMIN" "zpopmin" -2 [WRITE|FAST] 1 1 1 "sorted-set" "Remove and return members with the lowest scores in a sorted set" NONE;
    ZPopMax b"ZPOPMAX" "zpopmax" -2 [WRITE|FAST] 1 1 1 "sorted-set" "Remove and return members with the highest scores in a sorted set" NONE;
    BZPopMin b"BZPOPMIN" "bzpopmin" -3 [WRITE|NOSCRIPT|FAST] 1 -2 1 "sorted-set" "Remove and return the member with the lowest score from one or more sorted sets, or block until one is available" NONE;
    BZPopMax b"BZPOPMAX" "bzpopmax" -3 [WRITE|NOSCRIPT|FAST] 1 -2 1 "sorted-set" "Remove and return the member with the highest score from one or more sorted sets, or block until one is available" NONE;
    ZMPop b"ZMPOP" "zmpop" -4 [WRITE] 0 0 0 "sorted-set" "Remove and return members with scores in a sorted set" NONE;
    BZMPop b"BZMPOP" "bzmpop" -5 [WRITE] 0 0 0 "sorted-set" "Remove and return members with scores in a sorted set or block until one is available" NONE;
    ZRandMember b"ZRANDMEMBER" "zrandmember" -2 [READONLY] 1 1 1 "sorted-set" "Get one or multiple random elements from a sorted set" NONE;
    ZScan b"ZSCAN" "zscan" -3 [READONLY] 1 1 1 "sorted-set" "Incrementally iterate sorted sets elements and associated scores" NONE;
    ZUnion b"ZUNION" "zunion" -3 [READONLY] 0 0 0 "sorted-set" "Add multiple sorted sets" NONE;
    ZInter b"ZINTER" "zinter" -3 [READONLY] 0 0 0 "sorted-set" "Intersect multiple sorted sets" NONE;
    ZDiff b"ZDIFF" "zdiff" -3 [READONLY] 0 0 0 "sorted-set" "Subtract multiple sorted sets" NONE;
    ZUnionStore b"ZUNIONSTORE" "zunionstore" -4 [WRITE|DENYOOM] 1 1 1 "sorted-set" "Add multiple sorted sets and store the resulting sorted set in a new key" NONE;
    ZInterStore b"ZINTERSTORE" "zinterstore" -4 [WRITE|DENYOOM] 1 1 1 "sorted-set" "Intersect multiple sorted sets and store the resulting sorted set in a new key" NONE;
    ZDiffStore b"ZDIFFSTORE" "zdiffstore" -4 [WRITE|DENYOOM] 1 1 1 "sorted-set" "Subtract multiple sorted sets and store the resulting sorted set in a new key" NONE;
    ZInterCard b"ZINTERCARD" "zintercard" -3 [READONLY] 0 0 0 "sorted-set" "Intersect multiple sorted sets and return the cardinality of the result" NONE;
    XAdd b"XADD" "xadd" -5 [WRITE|DENYOOM|FAST] 1 1 1 "stream" "Appends a new message to a stream. Creates the key if it doesn't exist." NONE;
    XTrim b"XTRIM" "xtrim" -4 [WRITE] 1 1 1 "stream" "Deletes messages from the beginning of a stream." NONE;
    XDel b"XDEL" "xdel" -3 [WRITE|FAST] 1 1 1 "stream" "Returns the number of messages after removing them from a stream." NONE;
    XLen b"XLEN" "xlen" 2 [READONLY|FAST] 1 1 1 "stream" "Return the number of messages in a stream." NONE;
    XRange b"XRANGE" "xrange" -4 [READONLY] 1 1 1 "stream" "Returns the messages from a stream within a range of IDs." NONE;
    XRevRange b"XREVRANGE" "xrevrange" -4 [READONLY] 1 1 1 "stream" "Returns the messages from a stream within a range of IDs in reverse order." NONE;
    XRead b"XREAD" "xread" -4 [READONLY] 0 0 0 "stream" "Returns messages from multiple streams with IDs greater than the ones requested. Blocks until a message is available otherwise." NONE;
    XReadGroup b"XREADGROUP" "xreadgroup" -7 [WRITE] 0 0 0 "stream" "Returns new or historical messages from a stream for a consumer in a group. Blocks until a message is available otherwise." NONE;
    XGroup b"XGROUP" "xgroup" -2 [] 0 0 0 "stream" "A container for consumer groups commands." XGROUP_SUBS;
    XAck b"XACK" "xack" -4 [WRITE|FAST] 1 1 1 "stream" "Returns the number of messages that were successfully acknowledged by the consumer group member of a stream." NONE;
    XPending b"XPENDING" "xpending" -3 [READONLY] 1 1 1 "stream" "Returns the information and entries from a stream consumer group's pending entries list." NONE;
    XClaim b"XCLAIM" "xclaim" -6 [WRITE|FAST] 1 1 1 "stream" "Changes, or acquires, ownership of a message in a consumer group, as if the message was delivered a consumer group member." NONE;
    XAutoClaim b"XAUTOCLAIM" "xautoclaim" -6 [WRITE|FAST] 1 1 1 "stream" "Changes, or acquires, ownership of messages in a consumer group, as if the messages were delivered to as consumer group member." NONE;
    XInfo b"XINFO" "xinfo" -2 [] 0 0 0 "stream" "A container for stream introspection commands." XINFO_SUBS;
    XSetId b"XSETID" "xsetid" -3 [WRITE|DENYOOM|FAST] 1 1 1 "stream" "An internal command for replicating stream values." NONE;
    GeoAdd b"GEOADD" "geoadd" -5 [WRITE|DENYOOM] 1 1 1 "geo" "Add one or more geospatial items in the geospatial index represented using a sorted set" NONE;
    GeoDist b"GEODIST" "geodist" -4 [READONLY] 1 1 1 "geo" "Returns the distance between two members of a geospatial index" NONE;
    GeoHash b"GEOHASH" "geohash" -2 [READONLY] 1 1 1 "geo" "Returns members of a geospatial index as standard geohash strings" NONE;
    GeoPos b"GEOPOS" "geopos" -2 [READONLY] 1 1 1 "geo" "Returns longitude and latitude of members of a geospatial index" NONE;
    GeoRadius b"GEORADIUS" "georadius" -6 [WRITE|DENYOOM] 1 1 1 "geo" "Query a sorted set representing a geospatial index to fetch members matching a given maximum distance from a point" NONE;
    GeoRadiusRo b"GEORADIUS_RO" "georadius_ro" -6 [READONLY] 1 1 1 "geo" "A read-only variant for GEORADIUS" NONE;
    GeoRadiusByMember b"GEORADIUSBYMEMBER" "georadiusbymember" -5 [WRITE|DENYOOM] 1 1 1 "geo" "Query a sorted set representing a geospatial index to fetch members matching a given maximum distance from a member" NONE;
    GeoRadiusByMemberRo b"GEORADIUSBYMEMBER_RO" "georadiusbymember_ro" -5 [READONLY] 1 1 1 "geo" "A read-only variant for GEORADIUSBYMEMBER" NONE;
    GeoSearch b"GEOSEARCH" "geosearch" -7 [READONLY] 1 1 1 "geo" "Query a sorted set representing a geospatial index to fetch members inside an area of a box or a circle." NONE;
    GeoSearchStore b"GEOSEARCHSTORE" "geosearchstore" -8 [WRITE|DENYOOM] 1 2 1 "geo" "Query a sorted set representing a geospatial index to fetch members inside an area of a box or a circle, and store the result in another key." NONE;
    Subscribe b"SUBSCRIBE" "subscribe" -2 [PUBSUB|NOSCRIPT|LOADING|STALE] 0 0 0 "pubsub" "Listens for messages published to channels." NONE;
    Unsubscribe b"UNSUBSCRIBE" "unsubscribe" -1 [PUBSUB|NOSCRIPT|LOADING|STALE] 0 0 0 "pubsub" "Stops listening to messages posted to channels." NONE;
    PSubscribe b"PSUBSCRIBE" "psubscribe" -2 [PUBSUB|NOSCRIPT|LOADING|STALE] 0 0 0 "pubsub" "Listens for messages published to channels that match one or more patterns." NONE;
    PUnsubscribe b"PUNSUBSCRIBE" "punsubscribe" -1 [PUBSUB|NOSCRIPT|LOADING|STALE] 0 0 0 "pubsub" "Stops listening to messages published to channels that match one or more patterns." NONE;
    SSubscribe b"SSUBSCRIBE" "ssubscribe" -2 [PUBSUB|NOSCRIPT|LOADING|STALE] 1 -1 1 "pubsub" "Listens for messages published to shard channels." NONE;
    SUnsubscribe b"SUNSUBSCRIBE" "sunsubscribe" -1 [PUBSUB|NOSCRIPT|LOADING|STALE] 1 -1 1 "pubsub" "Stops listening to messages posted to shard channels." NONE;
    Publish b"PUBLISH" "publish" 3 [PUBSUB|LOADING|STALE|FAST|MAY_REPLICATE] 0 0 0 "pubsub" "Posts a message to a channel." NONE;
    SPublish b"SPUBLISH" "spublish" 3 [PUBSUB|LOADING|STALE|FAST|MAY_REPLICATE] 1 1 1 "pubsub" "Posts a message to a shard channel." NONE;
    PubSub b"PUBSUB" "pubsub" -2 [] 0 0 0 "pubsub" "A container for Pub/Sub commands." PUBSUB_SUBS;
    Rename b"RENAME" "rename" 3 [WRITE] 1 2 1 "generic" "Renames a key and overwrites the destination." NONE;
    RenameNx b"RENAMENX" "renamenx" 3 [WRITE|FAST] 1 2 1 "generic" "Renames a key only when the target key name doesn't exist." NONE;
    Copy b"COPY" "copy" -3 [WRITE|DENYOOM] 1 2 1 "generic" "Copies the value of a key to a new key." NONE;
    Move b"MOVE" "move" 3 [WRITE|FAST] 1 1 1 "generic" "Moves a key to another database." NONE;
    SwapDb b"SWAPDB" "swapdb" 3 [WRITE|FAST] 0 0 0 "server" "Swaps two Redis databases." NONE;
    ExpireTime b"EXPIRETIME" "expiretime" 2 [READONLY|FAST] 1 1 1 "generic" "Returns the expiration time of a key as a Unix timestamp." NONE;
    PExpireTime b"PEXPIRETIME" "pexpiretime" 2 [READONLY|FAST] 1 1 1 "generic" "Returns the expiration time of a key as a Unix milliseconds timestamp." NONE;
    SetBit b"SETBIT" "setbit" 4 [WRITE|DENYOOM] 1 1 1 "bitmap" "Sets or clears the bit at offset of the string value. Creates the key if it doesn't exist." NONE;
    GetBit b"GETBIT" "getbit" 3 [READONLY|FAST] 1 1 1 "bitmap" "Returns a bit value by offset." NONE;
    BitCount b"BITCOUNT" "bitcount" -2 [READONLY] 1 1 1 "bitmap" "Counts the number of set bits (population counting) in a string." NONE;
    BitPos b"BITPOS" "bitpos" -3 [READONLY] 1 1 1 "bitmap" "Finds the first set (1) or clear (0) bit in a string." NONE;
    BitOp b"BITOP" "bitop" -4 [WRITE|DENYOOM] 2 -1 1 "bitmap" "Performs bitwise operations on multiple strings, and stores the result." NONE;
    BitField b"BITFIELD" "bitfield" -2 [WRITE|DENYOOM] 1 1 1 "bitmap" "Performs arbitrary bitfield integer operations on strings." NONE;
    BitFieldRo b"BITFIELD_RO" "bitfield_ro" -2 [READONLY|FAST] 1 1 1 "bitmap" "Performs arbitrary read-only bitfield integer operations on strings." NONE;
    PfAdd b"PFADD" "pfadd" -2 [WRITE|DENYOOM|FAST] 1 1 1 "hyperloglog" "Adds the specified elements to the specified HyperLogLog." NONE;
    PfCount b"PFCOUNT" "pfcount" -2 [READONLY|MAY_REPLICATE] 1 -1 1 "hyperloglog" "Return the approximated cardinality of the set(s) observed by the HyperLogLog at key(s)." NONE;
    PfMerge b"PFMERGE" "pfmerge" -2 [WRITE|DENYOOM] 1 -1 1 "hyperloglog" "Merge N different HyperLogLogs into a single one." NONE;
    PfDebug b"PFDEBUG" "pfdebug" 3 [WRITE|DENYOOM|ADMIN] 2 2 1 "hyperloglog" "Internal commands for debugging HyperLogLog values" NONE;
    PfSelfTest b"PFSELFTEST" "pfselftest" 1 [ADMIN] 0 0 0 "hyperloglog" "An internal command for testing HyperLogLog values" NONE;
    Lcs b"LCS" "lcs" -3 [READONLY] 1 2 1 "string" "Finds the longest common substring." NONE;
    Dump b"DUMP" "dump" 2 [READONLY] 1 1 1 "generic" "Returns a serialized representation of the value stored at a key." NONE;
    Restore b"RESTORE" "restore" -4 [WRITE|DENYOOM] 1 1 1 "generic" "Creates a key from the serialized representation of a value." NONE;
    Eval b"EVAL" "eval" -3 [NOSCRIPT|STALE] 0 0 0 "scripting" "Executes a server-side Lua script." NONE;
    EvalRo b"EVAL_RO" "eval_ro" -3 [NOSCRIPT|STALE|READONLY] 0 0 0 "scripting" "Executes a read-only server-side Lua script." NONE;
    EvalSha b"EVALSHA" "evalsha" -3 [NOSCRIPT|STALE] 0 0 0 "scripting" "Executes a server-side Lua script by SHA1 digest." NONE;
    EvalShaRo b"EVALSHA_RO" "evalsha_ro" -3 [NOSCRIPT|STALE|READONLY] 0 0 0 "scripting" "Executes a read-only server-side Lua script by SHA1 digest." NONE;
    Script b"SCRIPT" "script" -2 [] 0 0 0 "scripting" "A container for Lua scripts management commands." SCRIPT_SUBS;
    Cluster b"CLUSTER" "cluster" -2 [] 0 0 0 "cluster" "A container for cluster commands. Augur runs standalone: every subcommand answers as Redis does with cluster support disabled." CLUSTER_SUBS;
    Monitor b"MONITOR" "monitor" 1 [ADMIN|NOSCRIPT|LOADING|STALE] 0 0 0 "server" "Listens for all requests received by the server in real-time." NONE;
    FCall b"FCALL" "fcall" -3 [NOSCRIPT|STALE] 0 0 0 "scripting" "Invokes a function." NONE;
    FCallRo b"FCALL_RO" "fcall_ro" -3 [NOSCRIPT|STALE|READONLY] 0 0 0 "scripting" "Invokes a read-only function." NONE;
}

const ACL_SUBS: &[SubSpec] = &[
    SubSpec {
        name: "acl|setuser",
        arity: -3,
        flags: ADMIN | NOSCRIPT | LOADING | STALE,
        summary:
            "Creates and modifies an ACL user and its rules (creating a user creates its tenant).",
    },
    SubSpec {
        name: "acl|deluser",
        arity: -3,
        flags: ADMIN | NOSCRIPT | LOADING | STALE,
        summary: "Deletes ACL users, their tenants' keys, and terminates their connections.",
    },
    SubSpec {
        name: "acl|getuser",
        arity: 3,
        flags: ADMIN | NOSCRIPT | LOADING | STALE,
        summary: "Lists the ACL rules of a user.",
    },
    SubSpec {
        name: "acl|users",
        arity: 2,
        flags: ADMIN | NOSCRIPT | LOADING | STALE,
        summary: "Lists all ACL users.",
    },
    SubSpec {
        name: "acl|list",
        arity: 2,
        flags: ADMIN | NOSCRIPT | LOADING | STALE,
        summary: "Dumps the effective rules in ACL file format.",
    },
    SubSpec {
        name: "acl|whoami",
        arity: 2,
        flags: NOSCRIPT | LOADING | STALE,
        summary: "Returns the authenticated username of the current connection.",
    },
    SubSpec {
        name: "acl|cat",
        arity: -2,
        flags: NOSCRIPT | LOADING | STALE,
        summary: "Lists the ACL categories, or the commands inside a category.",
    },
    SubSpec {
        name: "acl|dryrun",
        arity: -4,
        flags: ADMIN | NOSCRIPT | LOADING | STALE,
        summary: "Simulates the execution of a command by a user, without executing the command.",
    },
    SubSpec {
        name: "acl|genpass",
        arity: -2,
        flags: NOSCRIPT | LOADING | STALE,
        summary:
            "Generates a pseudorandom, secure password that can be used to identify ACL users.",
    },
    SubSpec {
        name: "acl|log",
        arity: -2,
        flags: ADMIN | NOSCRIPT | LOADING | STALE,
        summary: "Lists recent security events generated due to ACL rules.",
    },
    SubSpec {
        name: "acl|load",
        arity: 2,
        flags: ADMIN | NOSCRIPT | LOADING | STALE,
        summary: "Reloads the rules from the configured ACL file.",
    },
    SubSpec {
        name: "acl|save",
        arity: 2,
        flags: ADMIN | NOSCRIPT | LOADING | STALE,
        summary: "Saves the effective ACL rules in the configured ACL file.",
    },
    SubSpec {
        name: "acl|help",
        arity: 2,
        flags: LOADING | STALE,
        summary: "Returns helpful text about the different subcommands.",
    },
];

const TENANT_SUBS: &[SubSpec] = &[
    SubSpec {
        name: "tenant|set",
        arity: -5,
        flags: ADMIN | NOSCRIPT | LOADING | STALE,
        summary: "Sets a tenant's parameters (maxmemory, min-memory, miss-penalty, sample-rate).",
    },
    SubSpec {
        name: "tenant|get",
        arity: -3,
        flags: NOSCRIPT | LOADING | STALE,
        summary: "Returns a tenant's parameters.",
    },
    SubSpec {
        name: "tenant|list",
        arity: 2,
        flags: NOSCRIPT | LOADING | STALE,
        summary: "Lists the tenants.",
    },
    SubSpec {
        name: "tenant|info",
        arity: 3,
        flags: NOSCRIPT | LOADING | STALE,
        summary: "Returns a tenant's memory, target, K, hits, misses, evictions, miss latency, access rate and predicted miss ratio.",
    },
    SubSpec {
        name: "tenant|mrc",
        arity: -3,
        flags: NOSCRIPT | LOADING | STALE,
        summary: "Returns a tenant's miss-ratio curve (bytes, miss ratio) for one K or merged.",
    },
    SubSpec {
        name: "tenant|help",
        arity: 2,
        flags: LOADING | STALE,
        summary: "Returns helpful text about the different subcommands.",
    },
];

const CONFIG_SUBS: &[SubSpec] = &[
    SubSpec {
        name: "config|get",
        arity: -3,
        flags: ADMIN | NOSCRIPT | LOADING | STALE,
        summary: "Returns the effective values of configuration parameters.",
    },
    SubSpec {
        name: "config|set",
        arity: -4,
        flags: ADMIN | NOSCRIPT | LOADING | STALE,
        summary: "Sets configuration parameters in-flight.",
    },
    SubSpec {
        name: "config|resetstat",
        arity: 2,
        flags: ADMIN | NOSCRIPT | LOADING | STALE,
        summary: "Resets the server's statistics.",
    },
    SubSpec {
        name: "config|rewrite",
        arity: 2,
        flags: ADMIN | NOSCRIPT | LOADING | STALE,
        summary: "Persists the effective configuration to file.",
    },
    SubSpec {
        name: "config|help",
        arity: 2,
        flags: LOADING | STALE,
        summary: "Returns helpful text about the different subcommands.",
    },
];

const COMMAND_SUBS: &[SubSpec] = &[
    SubSpec {
        name: "command|count",
        arity: 2,
        flags: LOADING | STALE,
        summary: "Returns a count of commands.",
    },
    SubSpec {
        name: "command|docs",
        arity: -2,
        flags: LOADING | STALE,
        summary: "Returns documentary information about one, multiple or all commands.",
    },
    SubSpec {
        name: "command|info",
        arity: -2,
        flags: LOADING | STALE,
        summary: "Returns information about one, multiple or all commands.",
    },
    SubSpec {
        name: "command|list",
        arity: -2,
        flags: LOADING | STALE,
        summary: "Returns a list of command names.",
    },
    SubSpec {
        name: "command|getkeys",
        arity: -4,
        flags: LOADING | STALE,
        summary: "Extracts the key names from an arbitrary command.",
    },
    SubSpec {
        name: "command|getkeysandflags",
        arity: -4,
        flags: LOADING | STALE,
        summary: "Extracts the key names and access flags for an arbitrary command.",
    },
    SubSpec {
        name: "command|help",
        arity: 2,
        flags: LOADING | STALE,
        summary: "Returns helpful text about the different subcommands.",
    },
];

const CLIENT_SUBS: &[SubSpec] = &[
    SubSpec {
        name: "client|id",
        arity: 2,
        flags: NOSCRIPT | LOADING | STALE,
        summary: "Returns the unique client ID of the connection.",
    },
    SubSpec {
        name: "client|setname",
        arity: 3,
        flags: NOSCRIPT | LOADING | STALE,
        summary: "Sets the connection name.",
    },
    SubSpec {
        name: "client|getname",
        arity: 2,
        flags: NOSCRIPT | LOADING | STALE,
        summary: "Returns the name of the connection.",
    },
    SubSpec {
        name: "client|list",
        arity: -2,
        flags: ADMIN | NOSCRIPT | LOADING | STALE,
        summary: "Lists open connections.",
    },
    SubSpec {
        name: "client|info",
        arity: 2,
        flags: NOSCRIPT | LOADING | STALE,
        summary: "Returns information about the connection.",
    },
    SubSpec {
        name: "client|setinfo",
        arity: 4,
        flags: NOSCRIPT | LOADING | STALE,
        summary: "Sets information specific to the client or connection.",
    },
    SubSpec {
        name: "client|no-evict",
        arity: 3,
        flags: ADMIN | NOSCRIPT | LOADING | STALE,
        summary: "Sets the client eviction mode of the connection.",
    },
    SubSpec {
        name: "client|no-touch",
        arity: 3,
        flags: NOSCRIPT | LOADING | STALE,
        summary:
            "Controls whether commands sent by the client affect the LRU/LFU of accessed keys.",
    },
    SubSpec {
        name: "client|help",
        arity: 2,
        flags: LOADING | STALE,
        summary: "Returns helpful text about the different subcommands.",
    },
    SubSpec {
        name: "client|kill",
        arity: -3,
        flags: ADMIN | NOSCRIPT | LOADING | STALE,
        summary: "Terminates open connections.",
    },
    SubSpec {
        name: "client|reply",
        arity: 3,
        flags: NOSCRIPT | LOADING | STALE,
        summary: "Instructs the server whether to reply to commands.",
    },
    SubSpec {
        name: "client|pause",
        arity: -3,
        flags: ADMIN | NOSCRIPT | LOADING | STALE,
        summary: "Suspends commands processing.",
    },
    SubSpec {
        name: "client|unblock",
        arity: -3,
        flags: ADMIN | NOSCRIPT | LOADING | STALE,
        summary: "Unblocks a client blocked by a blocking command from a different connection.",
    },
    SubSpec {
        name: "client|unpause",
        arity: 2,
        flags: ADMIN | NOSCRIPT | LOADING | STALE,
        summary: "Resumes processing commands from paused clients.",
    },
    SubSpec {
        name: "client|tracking",
        arity: -3,
        flags: NOSCRIPT | LOADING | STALE,
        summary: "Controls server-assisted client-side caching for the connection.",
    },
    SubSpec {
        name: "client|caching",
        arity: 3,
        flags: NOSCRIPT | LOADING | STALE,
        summary: "Instructs the server whether to track the keys in the next request.",
    },
    SubSpec {
        name: "client|getredir",
        arity: 2,
        flags: NOSCRIPT | LOADING | STALE,
        summary:
            "Returns the client ID to which the connection's tracking notifications are redirected.",
    },
    SubSpec {
        name: "client|trackinginfo",
        arity: 2,
        flags: NOSCRIPT | LOADING | STALE,
        summary:
            "Returns information about server-assisted client-side caching for the connection.",
    },
];

const PUBSUB_SUBS: &[SubSpec] = &[
    SubSpec {
        name: "pubsub|channels",
        arity: -2,
        flags: PUBSUB | LOADING | STALE,
        summary: "Returns the active channels.",
    },
    SubSpec {
        name: "pubsub|numpat",
        arity: 2,
        flags: PUBSUB | LOADING | STALE,
        summary: "Returns a count of unique pattern subscriptions.",
    },
    SubSpec {
        name: "pubsub|numsub",
        arity: -2,
        flags: PUBSUB | LOADING | STALE,
        summary: "Returns a count of subscribers to channels.",
    },
    SubSpec {
        name: "pubsub|shardchannels",
        arity: -2,
        flags: PUBSUB | LOADING | STALE,
        summary: "Returns the active shard channels.",
    },
    SubSpec {
        name: "pubsub|shardnumsub",
        arity: -2,
        flags: PUBSUB | LOADING | STALE,
        summary: "Returns the count of subscribers of shard channels.",
    },
    SubSpec {
        name: "pubsub|help",
        arity: 2,
        flags: LOADING | STALE,
        summary: "Returns helpful text about the different subcommands.",
    },
];

const SLOWLOG_SUBS: &[SubSpec] = &[
    SubSpec {
        name: "slowlog|get",
        arity: -2,
        flags: ADMIN | LOADING | STALE,
        summary: "Returns the slow log's entries.",
    },
    SubSpec {
        name: "slowlog|len",
        arity: 2,
        flags: ADMIN | LOADING | STALE,
        summary: "Returns the number of entries in the slow log.",
    },
    SubSpec {
        name: "slowlog|reset",
        arity: 2,
        flags: ADMIN | LOADING | STALE,
        summary: "Clears all entries from the slow log.",
    },
    SubSpec {
        name: "slowlog|help",
        arity: 2,
        flags: LOADING | STALE,
        summary: "Show helpful text about the different subcommands",
    },
];

const LATENCY_SUBS: &[SubSpec] = &[
    SubSpec {
        name: "latency|doctor",
        arity: 2,
        flags: ADMIN | NOSCRIPT | LOADING | STALE,
        summary: "Returns a human-readable latency analysis report.",
    },
    SubSpec {
        name: "latency|graph",
        arity: 3,
        flags: ADMIN | NOSCRIPT | LOADING | STALE,
        summary: "Returns a latency graph for an event.",
    },
    SubSpec {
        name: "latency|help",
        arity: 2,
        flags: LOADING | STALE,
        summary: "Returns helpful text about the different subcommands.",
    },
    SubSpec {
        name: "latency|histogram",
        arity: -2,
        flags: ADMIN | NOSCRIPT | LOADING | STALE,
        summary: "Returns the cumulative distribution of latencies of a subset or all commands.",
    },
    SubSpec {
        name: "latency|history",
        arity: 3,
        flags: ADMIN | NOSCRIPT | LOADING | STALE,
        summary: "Returns timestamp-latency samples for an event.",
    },
    SubSpec {
        name: "latency|latest",
        arity: 2,
        flags: ADMIN | NOSCRIPT | LOADING | STALE,
        summary: "Returns the latest latency samples for all events.",
    },
    SubSpec {
        name: "latency|reset",
        arity: -2,
        flags: ADMIN | NOSCRIPT | LOADING | STALE,
        summary: "Resets the latency data for one or more events.",
    },
];

const MEMORY_SUBS: &[SubSpec] = &[
    SubSpec {
        name: "memory|usage",
        arity: -3,
        flags: READONLY,
        summary: "Estimates the memory usage of a key.",
    },
    SubSpec {
        name: "memory|malloc-stats",
        arity: 2,
        flags: LOADING | STALE,
        summary: "Returns the allocator statistics.",
    },
    SubSpec {
        name: "memory|doctor",
        arity: 2,
        flags: 0,
        summary: "Outputs a memory problems report.",
    },
    SubSpec {
        name: "memory|stats",
        arity: 2,
        flags: LOADING | STALE,
        summary: "Returns details about memory usage.",
    },
    SubSpec {
        name: "memory|purge",
        arity: 2,
        flags: LOADING | STALE,
        summary: "Asks the allocator to release memory.",
    },
    SubSpec {
        name: "memory|help",
        arity: 2,
        flags: LOADING | STALE,
        summary: "Returns helpful text about the different subcommands.",
    },
];

const FUNCTION_SUBS: &[SubSpec] = &[
    SubSpec {
        name: "function|delete",
        arity: 3,
        flags: WRITE | NOSCRIPT,
        summary: "Deletes a library and its functions.",
    },
    SubSpec {
        name: "function|dump",
        arity: 2,
        flags: NOSCRIPT,
        summary: "Dumps all libraries into a serialized binary payload.",
    },
    SubSpec {
        name: "function|flush",
        arity: -2,
        flags: WRITE | NOSCRIPT,
        summary: "Deletes all libraries and functions.",
    },
    SubSpec {
        name: "function|help",
        arity: 2,
        flags: LOADING | STALE,
        summary: "Returns helpful text about the different subcommands.",
    },
    SubSpec {
        name: "function|kill",
        arity: 2,
        flags: NOSCRIPT | ALLOW_BUSY,
        summary: "Terminates a function during execution.",
    },
    SubSpec {
        name: "function|list",
        arity: -2,
        flags: NOSCRIPT,
        summary: "Returns information about all libraries.",
    },
    SubSpec {
        name: "function|load",
        arity: -3,
        flags: WRITE | DENYOOM | NOSCRIPT,
        summary: "Creates a library.",
    },
    SubSpec {
        name: "function|restore",
        arity: -3,
        flags: WRITE | DENYOOM | NOSCRIPT,
        summary: "Restores all libraries from a payload.",
    },
    SubSpec {
        name: "function|stats",
        arity: 2,
        flags: NOSCRIPT | ALLOW_BUSY,
        summary: "Returns information about a function during execution.",
    },
];

const SCRIPT_SUBS: &[SubSpec] = &[
    SubSpec {
        name: "script|debug",
        arity: 3,
        flags: NOSCRIPT,
        summary: "Sets the debug mode of server-side Lua scripts.",
    },
    SubSpec {
        name: "script|exists",
        arity: -3,
        flags: NOSCRIPT,
        summary: "Determines whether server-side Lua scripts exist in the script cache.",
    },
    SubSpec {
        name: "script|flush",
        arity: -2,
        flags: NOSCRIPT,
        summary: "Removes all server-side Lua scripts from the script cache.",
    },
    SubSpec {
        name: "script|help",
        arity: 2,
        flags: LOADING | STALE,
        summary: "Returns helpful text about the different subcommands.",
    },
    SubSpec {
        name: "script|kill",
        arity: 2,
        flags: NOSCRIPT | ALLOW_BUSY,
        summary: "Terminates a server-side Lua script during execution.",
    },
    SubSpec {
        name: "script|load",
        arity: 3,
        flags: NOSCRIPT | STALE,
        summary: "Loads a server-side Lua script to the script cache.",
    },
];

const XGROUP_SUBS: &[SubSpec] = &[
    SubSpec {
        name: "xgroup|create",
        arity: -5,
        flags: WRITE | DENYOOM,
        summary: "Creates a consumer group.",
    },
    SubSpec {
        name: "xgroup|createconsumer",
        arity: 5,
        flags: WRITE | DENYOOM,
        summary: "Creates a consumer in a consumer group.",
    },
    SubSpec {
        name: "xgroup|delconsumer",
        arity: 5,
        flags: WRITE,
        summary: "Deletes a consumer from a consumer group.",
    },
    SubSpec {
        name: "xgroup|destroy",
        arity: 4,
        flags: WRITE,
        summary: "Destroys a consumer group.",
    },
    SubSpec {
        name: "xgroup|help",
        arity: 2,
        flags: LOADING | STALE,
        summary: "Returns helpful text about the different subcommands.",
    },
    SubSpec {
        name: "xgroup|setid",
        arity: -5,
        flags: WRITE,
        summary: "Sets the last-delivered ID of a consumer group.",
    },
];

const XINFO_SUBS: &[SubSpec] = &[
    SubSpec {
        name: "xinfo|consumers",
        arity: 4,
        flags: READONLY,
        summary: "Returns a list of the consumers in a consumer group.",
    },
    SubSpec {
        name: "xinfo|groups",
        arity: 3,
        flags: READONLY,
        summary: "Returns a list of the consumer groups of a stream.",
    },
    SubSpec {
        name: "xinfo|help",
        arity: 2,
        flags: LOADING | STALE,
        summary: "Returns helpful text about the different subcommands.",
    },
    SubSpec {
        name: "xinfo|stream",
        arity: -3,
        flags: READONLY,
        summary: "Returns information about a stream.",
    },
];

const OBJECT_SUBS: &[SubSpec] = &[
    SubSpec {
        name: "object|encoding",
        arity: 3,
        flags: READONLY,
        summary: "Returns the internal encoding of a Redis object.",
    },
    SubSpec {
        name: "object|freq",
        arity: 3,
        flags: READONLY,
        summary: "Returns the logarithmic access frequency counter of a Redis object.",
    },
    SubSpec {
        name: "object|idletime",
        arity: 3,
        flags: READONLY,
        summary: "Returns the time since the last access to a Redis object.",
    },
    SubSpec {
        name: "object|refcount",
        arity: 3,
        flags: READONLY,
        summary: "Returns the reference count of a value of a key.",
    },
    SubSpec {
        name: "object|help",
        arity: 2,
        flags: LOADING | STALE,
        summary: "Returns helpful text about the different subcommands.",
    },
];

/// Redis 7.0's CLUSTER subcommands (from `redis_commands.rs`); Augur answers each as a
/// standalone Redis does.
const CLUSTER_SUBS: &[SubSpec] = &[
    SubSpec {
        name: "cluster|addslots",
        arity: -3,
        flags: ADMIN | STALE,
        summary: "Assign new hash slots to receiving node",
    },
    SubSpec {
        name: "cluster|addslotsrange",
        arity: -4,
        flags: ADMIN | STALE,
        summary: "Assign new hash slots to receiving node",
    },
    SubSpec {
        name: "cluster|bumpepoch",
        arity: 2,
        flags: ADMIN | STALE,
        summary: "Advance the cluster config epoch",
    },
    SubSpec {
        name: "cluster|count-failure-reports",
        arity: 3,
        flags: ADMIN | STALE,
        summary: "Return the number of failure reports active for a given node",
    },
    SubSpec {
        name: "cluster|countkeysinslot",
        arity: 3,
        flags: STALE,
        summary: "Return the number of local keys in the specified hash slot",
    },
    SubSpec {
        name: "cluster|delslots",
        arity: -3,
        flags: ADMIN | STALE,
        summary: "Set hash slots as unbound in receiving node",
    },
    SubSpec {
        name: "cluster|delslotsrange",
        arity: -4,
        flags: ADMIN | STALE,
        summary: "Set hash slots as unbound in receiving node",
    },
    SubSpec {
        name: "cluster|failover",
        arity: -2,
        flags: ADMIN | STALE,
        summary: "Forces a replica to perform a manual failover of its master.",
    },
    SubSpec {
        name: "cluster|flushslots",
        arity: 2,
        flags: ADMIN | STALE,
        summary: "Delete a node's own slots information",
    },
    SubSpec {
        name: "cluster|forget",
        arity: 3,
        flags: ADMIN | STALE,
        summary: "Remove a node from the nodes table",
    },
    SubSpec {
        name: "cluster|getkeysinslot",
        arity: 4,
        flags: STALE,
        summary: "Return local key names in the specified hash slot",
    },
    SubSpec {
        name: "cluster|help",
        arity: 2,
        flags: LOADING | STALE,
        summary: "Show helpful text about the different subcommands",
    },
    SubSpec {
        name: "cluster|info",
        arity: 2,
        flags: STALE,
        summary: "Provides info about Redis Cluster node state",
    },
    SubSpec {
        name: "cluster|keyslot",
        arity: 3,
        flags: STALE,
        summary: "Returns the hash slot of the specified key",
    },
    SubSpec {
        name: "cluster|links",
        arity: 2,
        flags: STALE,
        summary: "Returns a list of all TCP links to and from peer nodes in cluster",
    },
    SubSpec {
        name: "cluster|meet",
        arity: -4,
        flags: ADMIN | STALE,
        summary: "Force a node cluster to handshake with another node",
    },
    SubSpec {
        name: "cluster|myid",
        arity: 2,
        flags: STALE,
        summary: "Return the node id",
    },
    SubSpec {
        name: "cluster|nodes",
        arity: 2,
        flags: STALE,
        summary: "Get Cluster config for the node",
    },
    SubSpec {
        name: "cluster|replicas",
        arity: 3,
        flags: ADMIN | STALE,
        summary: "List replica nodes of the specified master node",
    },
    SubSpec {
        name: "cluster|replicate",
        arity: 3,
        flags: ADMIN | STALE,
        summary: "Reconfigure a node as a replica of the specified master node",
    },
    SubSpec {
        name: "cluster|reset",
        arity: -2,
        flags: ADMIN | NOSCRIPT | STALE,
        summary: "Reset a Redis Cluster node",
    },
    SubSpec {
        name: "cluster|saveconfig",
        arity: 2,
        flags: ADMIN | STALE,
        summary: "Forces the node to save cluster state on disk",
    },
    SubSpec {
        name: "cluster|set-config-epoch",
        arity: 3,
        flags: ADMIN | STALE,
        summary: "Set the configuration epoch in a new node",
    },
    SubSpec {
        name: "cluster|setslot",
        arity: -4,
        flags: ADMIN | STALE,
        summary: "Bind a hash slot to a specific node",
    },
    SubSpec {
        name: "cluster|shards",
        arity: 2,
        flags: STALE,
        summary: "Get array of cluster slots to node mappings",
    },
    SubSpec {
        name: "cluster|slaves",
        arity: 3,
        flags: ADMIN | STALE,
        summary: "List replica nodes of the specified master node",
    },
    SubSpec {
        name: "cluster|slots",
        arity: 2,
        flags: STALE,
        summary: "Get array of Cluster slot to node mappings",
    },
];

// ---------------------------------------------------------------------------------------
// Redis 7.0's command metadata: ACL categories, key specs, movable keys.
// ---------------------------------------------------------------------------------------

/// One command (or `container|sub` subcommand) of Redis 7.0's command table, as Debian's
/// redis-server 7.0.15 answers COMMAND. The data is generated into `redis_commands.rs`
/// (`scripts/gen_redis_commands.py`) and is the one place Augur keeps:
///
/// - **ACL categories** (`acl_categories`, with the `@`): Redis's explicit categories plus
///   the ones implied by flags (setImplicitACLCategories). [`acl_categories`] answers by
///   full name; ACL rules (`+@string`) and `COMMAND LIST FILTERBY ACLCAT` use it.
/// - **Key specs** ([`KeySpec`]) from which [`get_keys`] computes key positions and flags
///   (COMMAND GETKEYS / GETKEYSANDFLAGS), as db.c's getKeysUsingKeySpecs does, and the
///   `movablekeys` flag in `flags`.
/// - Flags and arity as Redis reports them (COMMAND INFO).
///
/// It also covers commands Augur does not serve (lists, sorted sets, streams, ...):
/// COMMAND INFO and COMMAND GETKEYS answer for them from metadata alone (cluster-aware
/// clients ask key positions that way); COMMAND, COMMAND COUNT, LIST and DOCS enumerate
/// only the commands Augur serves ([`COMMANDS`]).
#[derive(Debug)]
pub struct RedisCommand {
    /// Lower case; `container|sub` for subcommands.
    pub name: &'static str,
    pub arity: i32,
    pub flags: &'static [&'static str],
    pub first_key: i32,
    pub last_key: i32,
    pub step: i32,
    pub acl_categories: &'static [&'static str],
    pub tips: &'static [&'static str],
    pub key_specs: &'static [KeySpec],
    pub subcommands: &'static [RedisCommand],
}

/// A key spec (Redis 7's `keySpec`): where the keys start and how many there are.
#[derive(Debug)]
pub struct KeySpec {
    pub notes: &'static str,
    /// `RW`/`RO`/`OW`/`RM`, `access`, `update`, `insert`, `delete`, `not_key`,
    /// `incomplete`, `variable_flags`.
    pub flags: &'static [&'static str],
    pub begin: Begin,
    pub find: Find,
}

/// begin_search of a key spec.
#[derive(Debug)]
pub enum Begin {
    /// The first key is at this argument index.
    Index(i32),
    /// The first key follows this keyword, searched from `startfrom` (negative: from the
    /// end, backwards).
    Keyword(&'static str, i32),
    Unknown,
}

/// find_keys of a key spec.
#[derive(Debug)]
pub enum Find {
    /// `lastkey` relative to the first key (negative: from the end); with `limit`, the
    /// keys are 1/limit of what remains.
    Range {
        lastkey: i32,
        keystep: i32,
        limit: i32,
    },
    /// The number of keys is the argument at `keynumidx` (relative to the begin), the
    /// keys start `firstkey` after the begin.
    Keynum {
        keynumidx: i32,
        firstkey: i32,
        keystep: i32,
    },
    Unknown,
}

impl RedisCommand {
    /// The subcommand `sub` (case-insensitive) of this container.
    pub fn sub(&self, sub: &[u8]) -> Option<&'static RedisCommand> {
        self.subcommands.iter().find(|s| {
            s.name
                .split_once('|')
                .is_some_and(|(_, n)| n.as_bytes().eq_ignore_ascii_case(sub))
        })
    }

    pub fn has_flag(&self, flag: &str) -> bool {
        self.flags.contains(&flag)
    }
}

/// Redis 7.0's metadata for a command by name (case-insensitive; `container|sub` finds a
/// subcommand). None for names Redis 7.0 does not have (Augur's TENANT among them).
pub fn redis_command(name: &[u8]) -> Option<&'static RedisCommand> {
    let lower = String::from_utf8_lossy(name).to_ascii_lowercase();
    let (base, sub) = match lower.split_once('|') {
        Some((b, s)) => (b, Some(s)),
        None => (lower.as_str(), None),
    };
    let table = crate::redis_commands::REDIS_COMMANDS;
    let c = &table[table.binary_search_by(|c| c.name.cmp(base)).ok()?];
    match sub {
        None => Some(c),
        Some(s) if !s.contains('|') => c.sub(s.as_bytes()),
        Some(_) => None,
    }
}

/// The ACL categories of a command or `container|sub` subcommand, with their `@`, as
/// Redis 7.0 declares them. Augur's own commands (TENANT) are `@slow` and, for the
/// administrative subcommands, `@admin @dangerous`; CLIENT SETINFO and NO-TOUCH have Redis 7.2's.
pub fn acl_categories(name: &str) -> &'static [&'static str] {
    if let Some(c) = redis_command(name.as_bytes()) {
        return c.acl_categories;
    }
    match name {
        "tenant|set" => &["@admin", "@slow", "@dangerous"],
        // Redis 7.2's categories for these.
        "client|setinfo" | "client|no-touch" => &["@slow", "@connection"],
        _ => &["@slow"],
    }
}

/// Every ACL category name Redis 7.0 has (ACL CAT), without the `@`.
pub const ACL_CATEGORY_NAMES: &[&str] = &[
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

/// A key COMMAND GETKEYS found: its argument index and the key spec's flags.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyRef {
    pub pos: usize,
    pub flags: &'static [&'static str],
}

/// Why [`get_keys`] found no keys.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GetKeysError {
    /// "Invalid arguments specified for command".
    InvalidArguments,
}

/// The keys of `args` (command name first) for command `cmd`, with their flags, as
/// Redis 7.0's getKeysFromCommandWithSpecs finds them (db.c): the key specs when they
/// are complete and their flags fixed, else the command's own getkeys procedure (SET,
/// BITFIELD, SORT, SORT_RO, MIGRATE are the commands whose specs need one).
pub fn get_keys(cmd: &RedisCommand, args: &[&[u8]]) -> Result<Vec<KeyRef>, GetKeysError> {
    let base = cmd.name.split('|').next().unwrap_or(cmd.name);
    let varflags = cmd
        .key_specs
        .iter()
        .any(|k| k.flags.contains(&"variable_flags"));
    if !varflags {
        if let Some(keys) = keys_from_specs(cmd, args) {
            return Ok(keys);
        }
    }
    match native_get_keys(base, args) {
        Some(keys) => Ok(keys),
        // EVAL, FCALL and the like with numkeys 0: no keys, and that is valid.
        None if cmd.has_flag("no_mandatory_keys") => Ok(Vec::new()),
        None => Err(GetKeysError::InvalidArguments),
    }
}

/// db.c's getKeysUsingKeySpecs; None where a spec is invalid for these arguments (or
/// unknown / incomplete, which then needs the command's own procedure).
fn keys_from_specs(cmd: &RedisCommand, args: &[&[u8]]) -> Option<Vec<KeyRef>> {
    let argc = args.len() as i64;
    let mut keys = Vec::new();
    for spec in cmd.key_specs {
        if spec.flags.contains(&"not_key") {
            continue;
        }
        if spec.flags.contains(&"incomplete") {
            return None;
        }
        let mut first: i64 = match spec.begin {
            Begin::Index(pos) => pos as i64,
            Begin::Keyword(word, startfrom) => {
                let startfrom = startfrom as i64;
                let (start, end) = if startfrom > 0 {
                    (startfrom, argc - 1)
                } else {
                    (argc + startfrom, 0)
                };
                let mut found = 0;
                let mut i = start;
                while i != end {
                    if i >= argc || i < 1 {
                        break;
                    }
                    if args[i as usize].eq_ignore_ascii_case(word.as_bytes()) {
                        found = i + 1;
                        break;
                    }
                    i += if start <= end { 1 } else { -1 };
                }
                if found == 0 {
                    continue;
                }
                found
            }
            Begin::Unknown => return None,
        };
        let (last, step) = match spec.find {
            Find::Range {
                lastkey,
                keystep,
                limit,
            } => {
                let last = if lastkey >= 0 {
                    first + lastkey as i64
                } else if limit == 0 {
                    argc + lastkey as i64
                } else {
                    first + ((argc - first) / limit as i64 + lastkey as i64)
                };
                (last, keystep as i64)
            }
            Find::Keynum {
                keynumidx,
                firstkey,
                keystep,
            } => {
                let idx = first + keynumidx as i64;
                if keynumidx as i64 >= argc || idx >= argc {
                    return None;
                }
                let numkeys = crate::resp::parse_i64(args[idx as usize]).filter(|n| *n >= 0)?;
                first += firstkey as i64;
                (first + numkeys - 1, keystep as i64)
            }
            Find::Unknown => return None,
        };
        if last >= argc || last < first || first >= argc {
            return None;
        }
        let mut i = first;
        while i <= last {
            keys.push(KeyRef {
                pos: i as usize,
                flags: spec.flags,
            });
            i += step.max(1);
        }
    }
    Some(keys)
}

const F_OW_UPDATE: &[&str] = &["OW", "update"];
const F_RW_ACCESS_UPDATE: &[&str] = &["RW", "access", "update"];
const F_RO_ACCESS: &[&str] = &["RO", "access"];
const F_RW_ACCESS_DELETE: &[&str] = &["RW", "access", "delete"];

/// The getkeys procedures of db.c for commands whose specs are not enough.
fn native_get_keys(base: &str, args: &[&[u8]]) -> Option<Vec<KeyRef>> {
    let argc = args.len();
    let eq = |i: usize, w: &str| args[i].eq_ignore_ascii_case(w.as_bytes());
    let key = |pos, flags| KeyRef { pos, flags };
    match base {
        // setGetKeys: GET makes the write a read-modify-write.
        "set" => {
            let get = (3..argc).any(|i| eq(i, "get"));
            Some(vec![key(
                1,
                if get { F_RW_ACCESS_UPDATE } else { F_OW_UPDATE },
            )])
        }
        // bitfieldGetKeys: read-only while every operation is a GET.
        "bitfield" => {
            let mut readonly = true;
            let mut i = 2;
            while i < argc {
                let rem = argc - i - 1;
                if eq(i, "get") && rem >= 2 {
                    i += 2;
                } else if (eq(i, "set") || eq(i, "incrby")) && rem >= 3 {
                    readonly = false;
                    break;
                } else if eq(i, "overflow") && rem >= 1 {
                    i += 1;
                } else {
                    readonly = false;
                    break;
                }
                i += 1;
            }
            Some(vec![key(
                1,
                if readonly {
                    F_RO_ACCESS
                } else {
                    F_RW_ACCESS_UPDATE
                },
            )])
        }
        "sort_ro" => Some(vec![key(1, F_RO_ACCESS)]),
        // sortGetKeys: the sorted key, and the last STORE's destination.
        "sort" => {
            let mut keys = vec![key(1, F_RO_ACCESS)];
            let mut store = None;
            let mut i = 2;
            while i < argc {
                if eq(i, "limit") {
                    i += 2;
                } else if eq(i, "get") || eq(i, "by") {
                    i += 1;
                } else if eq(i, "store") && i + 1 < argc {
                    store = Some(i + 1);
                }
                i += 1;
            }
            keys.extend(store.map(|p| key(p, F_OW_UPDATE)));
            Some(keys)
        }
        // migrateGetKeys: the key argument, or the keys after KEYS.
        "migrate" => {
            let (mut first, mut num) = (3, 1);
            let mut i = 6;
            while i < argc {
                if eq(i, "keys") {
                    if !args[3].is_empty() {
                        return None;
                    }
                    first = i + 1;
                    num = argc - first;
                    break;
                }
                if eq(i, "auth") {
                    i += 1;
                } else if eq(i, "auth2") {
                    i += 2;
                }
                i += 1;
            }
            Some(
                (first..first + num)
                    .map(|p| key(p, F_RW_ACCESS_DELETE))
                    .collect(),
            )
        }
        _ => None,
    }
}

/// The longest command name (GEORADIUSBYMEMBER_RO).
pub const MAX_NAME_LEN: usize = 20;

/// Upper-cases a command name into `buf` without allocating; None if it is too long to
/// be any command (the caller then answers "unknown command").
#[inline]
pub fn upper<'a>(name: &[u8], buf: &'a mut [u8; MAX_NAME_LEN]) -> Option<&'a [u8]> {
    if name.len() > buf.len() {
        return None;
    }
    for (d, s) in buf.iter_mut().zip(name) {
        *d = s.to_ascii_uppercase();
    }
    Some(&buf[..name.len()])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_is_consistent() {
        for (i, c) in COMMANDS.iter().enumerate() {
            assert_eq!(c.cmd as usize, i, "{} out of order", c.name);
            let mut b = [0u8; MAX_NAME_LEN];
            let up = upper(c.name.as_bytes(), &mut b).expect("name fits");
            assert_eq!(lookup(up).map(|s| s.name), Some(c.name));
            assert!(c.arity != 0);
            for s in c.subcommands {
                assert!(s.name.starts_with(&format!("{}|", c.name)));
            }
        }
        assert!(lookup(b"get").is_none(), "lookup expects upper case");
    }

    #[test]
    fn arity() {
        let get = lookup(b"GET").unwrap();
        assert!(get.arity_ok(2) && !get.arity_ok(1) && !get.arity_ok(3));
        let set = lookup(b"SET").unwrap();
        assert!(set.arity_ok(3) && set.arity_ok(9) && !set.arity_ok(2));
    }
}
