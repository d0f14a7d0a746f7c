-- wrk script: the DynamoDB JSON protocol as `pathdb bench http --target dynamodb` speaks it
-- (table pathdb-bench, pk "BENCH#<i % 100>", sk "ITEM#<i, 10 digits>", a dummy SigV4 header,
-- which is all dynalite checks). WRK_OP=get: GetItem of item 0 (one item, like a plain wrk
-- GET); WRK_OP=put: PutItem of a random item among WRK_KEYS (default 10000).
--   WRK_OP=get wrk -t2 -c32 -d30s --latency -s scripts/wrk/dynamodb.lua http://127.0.0.1:PORT
local op = os.getenv("WRK_OP") or "get"
local keys = tonumber(os.getenv("WRK_KEYS") or "10000")
local payload = string.rep("x", 100)
local day = os.date("!%Y%m%d")
local headers = {
  ["Content-Type"] = "application/x-amz-json-1.0",
  ["X-Amz-Date"] = os.date("!%Y%m%dT%H%M%SZ"),
  ["Authorization"] = "AWS4-HMAC-SHA256 Credential=AKIDPATHDBBENCH/" .. day
    .. "/us-east-1/dynamodb/aws4_request, SignedHeaders=content-type;host;x-amz-date;x-amz-target, Signature="
    .. string.rep("0", 64),
}

local function key(i)
  return string.format('"pk":{"S":"BENCH#%d"},"sk":{"S":"ITEM#%010d"}', i % 100, i)
end

if op == "get" then
  -- A fixed request: wrk builds it once.
  wrk.method = "POST"
  wrk.path = "/"
  for k, v in pairs(headers) do wrk.headers[k] = v end
  wrk.headers["X-Amz-Target"] = "DynamoDB_20120810.GetItem"
  wrk.body = '{"TableName":"pathdb-bench","Key":{' .. key(0) .. '}}'
elseif op == "put" then
  headers["X-Amz-Target"] = "DynamoDB_20120810.PutItem"
  function init(args)
    math.randomseed(os.time() + math.floor(os.clock() * 1e6) + tonumber(tostring({}):match("0x(%x+)"), 16))
  end
  function request()
    local i = math.random(0, keys - 1)
    local body = string.format('{"TableName":"pathdb-bench","Item":{%s,"n":{"N":"%d"},"payload":{"S":"%s"}}}',
      key(i), i, payload)
    return wrk.format("POST", "/", headers, body)
  end
else
  error("WRK_OP must be get or put, not " .. op)
end

