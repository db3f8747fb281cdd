-- wrk script of tests/e2e/realapp_e2e.sh: a paced load of distinct URLs.
--   LOAD_PATH     request path, e.g. /shop/cart or /pages/product
--   LOAD_PARAMS   "cart": ?sku=N (Tomcat shop: every request without cookies is a new visitor)
--                 "page": ?id=N&utm_source=...&_=<unique> (product pages with a cache-busting parameter,
--                 as browsers send them for Ajax requests with cache: false)
--   LOAD_DELAY_MS each connection waits this long after every response (paces the load: with C
--                 connections the rate is at most C * 1000 / (LOAD_DELAY_MS + latency) requests/s)
local counter = 0
local delay_ms = tonumber(os.getenv("LOAD_DELAY_MS") or "8")
local path = os.getenv("LOAD_PATH") or "/"
local params = os.getenv("LOAD_PARAMS") or "cart"
local thread_tag = tostring(os.time()) .. tostring(math.random(100000))

request = function()
  counter = counter + 1
  local id = math.random(1, 50000)
  if params == "page" then
    return wrk.format("GET", path .. "?id=" .. id .. "&utm_source=newsletter&utm_medium=email&_=" ..
      thread_tag .. "-" .. counter)
  end
  return wrk.format("GET", path .. "?sku=" .. id)
end

delay = function()
  return delay_ms
end
