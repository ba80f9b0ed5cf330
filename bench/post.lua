-- wrk script for `make bench`: POSTs one AdmissionReview over keep-alive
-- connections, counts every response whose status is not 200 and prints one
-- machine-readable line at the end (latencies in microseconds).
--   wrk ... -s bench/post.lua URL -- BODY_FILE
local body_file = nil
local threads = {}

function init(args)
   body_file = args[1]
   local f = assert(io.open(body_file, "rb"))
   wrk.method = "POST"
   wrk.body = f:read("*a")
   f:close()
   wrk.headers["Content-Type"] = "application/json"
   wrk.headers["Connection"] = "keep-alive"
   non200 = 0
   req = wrk.format()
end

function setup(thread)
   table.insert(threads, thread)
end

function request()
   return req
end

function response(status, headers, body)
   if status ~= 200 then
      non200 = non200 + 1
   end
end

function done(summary, latency, requests)
   local bad = 0
   for _, t in ipairs(threads) do
      bad = bad + (t:get("non200") or 0)
   end
   local e = summary.errors
   local secs = summary.duration / 1e6
   io.write(string.format(
      "BENCH requests=%d duration_s=%.3f rps=%.1f p50_us=%d p90_us=%d p99_us=%d p999_us=%d max_us=%d " ..
      "non200=%d connect=%d read=%d write=%d status=%d timeout=%d bytes=%d\n",
      summary.requests, secs, summary.requests / secs,
      latency:percentile(50), latency:percentile(90), latency:percentile(99),
      latency:percentile(99.9), latency.max,
      bad, e.connect, e.read, e.write, e.status, e.timeout, summary.bytes))
end
