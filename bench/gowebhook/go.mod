module rdma-webhook/bench/gowebhook

go 1.26.0
