-- wrk script for the peers of scripts/bench-peers.sh: one request kind per run, chosen by the
-- environment, against keys that bench-peers.sh preloaded (WRK_KEYS of them, default 10000).
--   WRK_PEER=etcd        WRK_OP=get|put|list   etcd 3.5's JSON gateway (/v3/kv/range, /v3/kv/put)
--   WRK_PEER=pocketbase  WRK_OP=put            PATCH of a record of the `items` collection
-- Gets of PocketBase and every PathDB request are plain URLs (no script).
local peer = os.getenv("WRK_PEER") or "etcd"
local op = os.getenv("WRK_OP") or "get"
local keys = tonumber(os.getenv("WRK_KEYS") or "10000")
local payload = string.rep("x", 100)
local json = { ["Content-Type"] = "application/json" }

-- Standard base64 (etcd's gateway takes keys and values as base64 bytes).
local alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
local function base64(s)
  local out = {}
  for i = 1, #s, 3 do
    local a, b, c = s:byte(i, i + 2)
    local n = a * 65536 + (b or 0) * 256 + (c or 0)
    -- Characters that carry bits: 2 for one byte, 3 for two, 4 for three; "=" pads the rest.
    local used = c and 4 or (b and 3 or 2)
    for j = 1, 4 do
      local index = math.floor(n / 2 ^ ((4 - j) * 6)) % 64
      out[#out + 1] = j <= used and alphabet:sub(index + 1, index + 1) or "="
    end
  end
  return table.concat(out)
end

function init(args)
  -- Each wrk thread has its own Lua state: seed each differently.
  math.randomseed(os.time() + math.floor(os.clock() * 1e6) + tonumber(tostring({}):match("0x(%x+)"), 16))
end

-- The bodies that do not depend on the key, made once.
local range_one = string.format('{"key":"%s"}', base64("bench/item-0"))
local range_list = string.format('{"key":"%s","range_end":"%s","limit":100}', base64("bench/"), base64("bench0"))

function request()
  if peer == "etcd" then
    if op == "get" then
      return wrk.format("POST", "/v3/kv/range", json, range_one)
    elseif op == "list" then
      return wrk.format("POST", "/v3/kv/range", json, range_list)
    end
    local i = math.random(0, keys - 1)
    local body = string.format('{"key":"%s","value":"%s"}', base64("bench/item-" .. i), base64(payload))
    return wrk.format("POST", "/v3/kv/put", json, body)
  end
  -- PocketBase: ids are 15 characters of [a-z0-9].
  local i = math.random(0, keys - 1)
  local body = string.format('{"n":%d,"payload":"%s"}', i, payload)
  return wrk.format("PATCH", string.format("/api/collections/items/records/item%011d", i), json, body)
end
