-- wrk script of scripts/bench-access.sh: the items of team 7, with a bearer token or none.
--   WRK_OP=get    GET /v1/items/team-7/doc-1 (one item, as a plain `wrk URL` does)
--   WRK_OP=put    PUT (unconditional overwrite) of /v1/items/team-7/doc-<n>, n < WRK_KEYS
--                 (default 10000), with bench http's value shape
--   WRK_TOKEN     sent as `Authorization: Bearer <token>` (none when unset or empty)
--   wrk -t2 -c32 -d10s --latency -s scripts/wrk/pathdb-access.lua http://127.0.0.1:PORT
local op = os.getenv("WRK_OP") or "get"
local keys = tonumber(os.getenv("WRK_KEYS") or "10000")
local token = os.getenv("WRK_TOKEN") or ""
local payload = string.rep("x", 100)
local get_headers = {}
local put_headers = { ["Content-Type"] = "application/json" }
if token ~= "" then
  get_headers["Authorization"] = "Bearer " .. token
  put_headers["Authorization"] = "Bearer " .. token
end

function init(args)
  -- Each wrk thread has its own Lua state: seed each differently.
  math.randomseed(os.time() + math.floor(os.clock() * 1e6) + tonumber(tostring({}):match("0x(%x+)"), 16))
end

local get = wrk.format("GET", "/v1/items/team-7/doc-1", get_headers)

function request()
  if op == "get" then
    return get
  end
  local n = math.random(0, keys - 1)
  local body = string.format('{"n":%d,"payload":"%s"}', n, payload)
  return wrk.format("PUT", string.format("/v1/items/team-7/doc-%d", n), put_headers, body)
end
