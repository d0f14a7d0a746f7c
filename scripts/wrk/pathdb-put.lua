-- wrk script: PUT (unconditional overwrite) of a random item among those `pathdb bench http`
-- preloads (/bench-<i % 100>/item-<i>, i < WRK_KEYS, default 10000), with its value shape.
--   wrk -t2 -c32 -d30s --latency -s scripts/wrk/pathdb-put.lua http://127.0.0.1:PORT
local keys = tonumber(os.getenv("WRK_KEYS") or "10000")
local payload = string.rep("x", 100)
local headers = { ["Content-Type"] = "application/json" }

function init(args)
  -- Each wrk thread has its own Lua state: seed each differently.
  math.randomseed(os.time() + math.floor(os.clock() * 1e6) + tonumber(tostring({}):match("0x(%x+)"), 16))
end

function request()
  local i = math.random(0, keys - 1)
  local body = string.format('{"n":%d,"payload":"%s"}', i, payload)
  return wrk.format("PUT", string.format("/v1/items/bench-%d/item-%d", i % 100, i), headers, body)
end
