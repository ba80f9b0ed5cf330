module rdma-webhook/bench/cluster/loadgen

go 1.26.0
