-- Augur's script sandbox, run once when an interpreter starts (chunk "=augur").
-- Mirrors Redis 7.0's script_lua.c / eval.c set-up: the globals a script sees, the
-- `redis` API table, the libraries, and the protection of all of them.
--
-- Redis patches Lua with read-only tables; stock Lua 5.1 has none, so the protection is
-- made of proxies: every script function runs with the environment P, an empty table
-- whose metatable reads from V (the visible globals) and refuses writes; the library
-- tables in V are read-only proxies too. setmetatable, getmetatable, rawset, rawget,
-- next, pairs, loadstring and load are wrapped so that they cannot reach
-- around a proxy (getfenv, setfenv and newproxy are not given to scripts: Redis
-- 7.0.15 removed them). Errors name the caller's line, as Redis's do; the error handler
-- skips this chunk's frames, so error positions are the script's.
--
-- Arguments: N, the native functions (Rust), and the debug library (only the error
-- handler keeps it). Returns P, V, the error handler and, for the functions
-- interpreter (N.register_function is set), the load-mode switch.

local N, dbg = ...
local error, type, tostring, select = error, type, tostring, select
local rawget, rawset, rawequal, next = rawget, rawset, rawequal, next
local setmetatable, getmetatable = setmetatable, getmetatable
local setfenv, loadstring, pcall = setfenv, loadstring, pcall
local concat = table.concat
local INTERNAL = "=augur"

local READONLY = "Attempt to modify a readonly table"
local function ro_newindex() error(READONLY, 2) end

-- proxy -> the table it shows; proxy -> what getmetatable answers for it.
local protected = setmetatable({}, {__mode = "k"})
local metaview = setmetatable({}, {__mode = "k"})

local function ro(t, meta)
  local p = setmetatable({}, {__index = t, __newindex = ro_newindex, __metatable = false})
  protected[p] = t
  metaview[p] = meta
  return p
end

local function copy(t)
  local c = {}
  for k, v in next, t do c[k] = v end
  return c
end

-- The visible globals. Reading a missing one is an error (luaProtectedTableError).
local V = {}
setmetatable(V, {__index = function(_, k)
  local tk = type(k)
  if tk ~= "string" and tk ~= "number" then
    error("Second argument to luaProtectedTableError must be a string or number", 2)
  end
  error("Script attempted to access nonexistent global variable '" .. tostring(k) .. "'", 2)
end})

-- The environment of every script.
local P = {}
local P_meta = {__index = V, __newindex = ro_newindex, __metatable = false}
setmetatable(P, P_meta)
protected[P] = V
metaview[P] = ro({__index = ro(V), __newindex = ro_newindex})

local string_lib = ro(copy(string))
local string_meta_view = ro({__index = string_lib})

-- Wrapped builtins.
local function w_getmetatable(t)
  if protected[t] then return metaview[t] end
  if type(t) == "string" then return string_meta_view end
  return getmetatable(t)
end

local function w_rawget(t, k)
  local real = protected[t]
  if real then return rawget(real, k) end
  return rawget(t, k)
end

local function w_next(t, k)
  local real = protected[t]
  if real then return next(real, k) end
  return next(t, k)
end

local w_rawset, w_setmetatable, w_pairs = N.make_guards(protected, w_next)

-- Compiled code runs in the sandbox; bytecode is refused (it can break the VM).
local function w_loadstring(s, name)
  if type(s) == "string" and s:byte(1) == 27 then
    return nil, "binary code loading is not allowed"
  end
  local f, e = loadstring(s, name)
  if f then setfenv(f, P) end
  return f, e
end

local function w_load(reader, name)
  if type(reader) ~= "function" then
    error("bad argument #1 to 'load' (function expected, got " .. type(reader) .. ")", 2)
  end
  local parts = {}
  while true do
    local piece = reader()
    if piece == nil or piece == "" then break end
    if type(piece) ~= "string" then return nil, "reader function must return a string" end
    parts[#parts + 1] = piece
  end
  return w_loadstring(concat(parts), name or "=(load)")
end

-- Redis's pcall: an error table from redis.call becomes its message.
local function pcall_result(ok, ...)
  if ok then return ok, ... end
  local e = ...
  if type(e) == "table" then
    local m = e.err
    local tm = type(m)
    if tm == "string" or tm == "number" then return false, m end
  end
  return false, e
end
local function w_pcall(...)
  return pcall_result(pcall(...))
end

-- The redis table.
local R = {
  call = N.call, pcall = N.pcall, log = N.log, setresp = N.setresp,
  sha1hex = N.sha1hex, error_reply = N.error_reply, status_reply = N.status_reply,
  set_repl = N.set_repl, acl_check_cmd = N.acl_check_cmd,
  replicate_commands = function() return true end,
  breakpoint = function() return false end,
  debug = function() end,
  LOG_DEBUG = 0, LOG_VERBOSE = 1, LOG_NOTICE = 2, LOG_WARNING = 3,
  REPL_NONE = 0, REPL_AOF = 1, REPL_SLAVE = 2, REPL_REPLICA = 2, REPL_ALL = 3,
  REDIS_VERSION = N.version, REDIS_VERSION_NUM = N.version_num,
}

-- math with Redis's deterministic PRNG.
local M = copy(math)
M.random = N.random
M.randomseed = N.randomseed

-- cjson (lua-cjson 2.1.0's interface; the codec is in Rust).
local cfg = N.cjson_cfg
cfg.encode_max_depth = 1000
cfg.decode_max_depth = 1000
cfg.encode_invalid_numbers = false
cfg.decode_invalid_numbers = true
cfg.encode_keep_buffer = true
cfg.encode_number_precision = 14
cfg.sparse_convert = false
cfg.sparse_ratio = 2
cfg.sparse_safe = 10
local J = {
  null = N.null, _NAME = "cjson", _VERSION = "2.1.0",
  encode = N.cjson_encode,
  decode = N.cjson_decode,
  encode_max_depth = function(n)
    if n ~= nil then cfg.encode_max_depth = n end
    return cfg.encode_max_depth
  end,
  decode_max_depth = function(n)
    if n ~= nil then cfg.decode_max_depth = n end
    return cfg.decode_max_depth
  end,
  encode_invalid_numbers = function(v)
    if v ~= nil then cfg.encode_invalid_numbers = v end
    return cfg.encode_invalid_numbers
  end,
  decode_invalid_numbers = function(v)
    if v ~= nil then cfg.decode_invalid_numbers = v end
    return cfg.decode_invalid_numbers
  end,
  encode_keep_buffer = function(v)
    if v ~= nil then cfg.encode_keep_buffer = v end
    return cfg.encode_keep_buffer
  end,
  encode_number_precision = function(n)
    if n ~= nil then
      if type(n) ~= "number" or n < 1 or n > 14 then
        error("bad argument #1 to 'encode_number_precision' (expected integer between 1 and 14)", 2)
      end
      cfg.encode_number_precision = n
    end
    return cfg.encode_number_precision
  end,
  encode_sparse_array = function(convert, ratio, safe)
    if convert ~= nil then cfg.sparse_convert = convert end
    if ratio ~= nil then cfg.sparse_ratio = ratio end
    if safe ~= nil then cfg.sparse_safe = safe end
    return cfg.sparse_convert, cfg.sparse_ratio, cfg.sparse_safe
  end,
}

local coroutine_lib = ro(copy(coroutine))

V.assert = assert
V.collectgarbage = collectgarbage
V.error = error
V.gcinfo = gcinfo
V.getmetatable = w_getmetatable
V.ipairs = ipairs
V.load = w_load
V.loadstring = w_loadstring
V.next = w_next
V.pairs = w_pairs
V.pcall = w_pcall
V.rawequal = rawequal
V.rawget = w_rawget
V.rawset = w_rawset
V.select = select
V.setmetatable = w_setmetatable
V.tonumber = tonumber
V.tostring = tostring
V.type = type
V.unpack = unpack
V.xpcall = xpcall
V._VERSION = _VERSION
V._G = P
V.coroutine = coroutine_lib
V.string = string_lib
V.table = ro(copy(table))
V.math = ro(M)
V.redis = ro(R)
V.cjson = ro(J)
V.bit = ro(N.bit)
V.cmsgpack = ro(N.cmsgpack)
V.struct = ro(N.struct)

-- The functions interpreter (function_lua.c): while FUNCTION LOAD runs a library's
-- code, the globals are only `redis` with register_function, log, the LOG_* levels and
-- the version (LIBRARY_API); a missing global, or a missing field of that `redis`, is
-- an error. The callbacks a library registers share P as their environment, so they
-- see the full API again once the load is over (Redis swaps the globals' __index the
-- same way). `load_mode(true/false)` switches.
local load_mode
if N.register_function then
  local missing = getmetatable(V).__index
  local LR = {
    register_function = N.register_function, log = N.log,
    LOG_DEBUG = 0, LOG_VERBOSE = 1, LOG_NOTICE = 2, LOG_WARNING = 3,
    REDIS_VERSION = N.version, REDIS_VERSION_NUM = N.version_num,
  }
  local lr = setmetatable({}, {
    __index = function(_, k)
      local v = LR[k]
      if v == nil then return missing(LR, k) end
      return v
    end,
    __newindex = ro_newindex, __metatable = false})
  protected[lr] = LR
  local LIB = setmetatable({redis = lr}, {__index = missing})
  load_mode = function(on)
    if on then P_meta.__index = LIB else P_meta.__index = V end
  end
end

-- Method calls on strings reach the (read-only) string library.
getmetatable("").__index = string_lib

-- The error handler of every script run (eval.c's __redis__err__handler): the error
-- becomes a table {err=, source=, line=} naming the script's line. Frames of this
-- chunk are skipped: they stand for C functions of Redis.
local getinfo = dbg.getinfo
local function frame(level)
  local i = getinfo(level, "nSl")
  while i and i.source == INTERNAL do
    level = level + 1
    i = getinfo(level, "nSl")
  end
  return i, level
end
local function err_handler(err)
  local i, level = frame(3)
  if i and i.what == "C" then
    i = frame(level + 1)
  end
  if type(err) ~= "table" then
    err = {err = "ERR " .. tostring(err)}
  end
  if i then
    err["source"] = i.source
    err["line"] = i.currentline
  end
  return err
end

return P, V, err_handler, load_mode
