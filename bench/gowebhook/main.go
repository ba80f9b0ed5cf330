// gowebhook: the Go yardstick of `make bench`. A minimal mutating admission
// webhook as one would write it with the standard library only (net/http,
// encoding/json, the AdmissionReview decoded into generic maps), applying the
// same mutation as rdma-webhook's roce-8card profile: the NCCL env, IPC_LOCK,
// a memory-backed /dev/shm, schedulerName volcano, rdma/hca and the
// annotations rdma-webhook.io/injected and selected-by, as a JSON Patch.
// Profile selection and the finer rules (envFrom, hostNetwork, init
// containers) are left out: it is a yardstick for the serving cost, not a
// second implementation.
//
// Standard library only: a module of its own (bench/gowebhook/go.mod).
// Usage: gowebhook -listen 127.0.0.1:PORT -cert FILE -key FILE
package main

import (
	"crypto/tls"
	"encoding/json"
	"flag"
	"log"
	"net/http"
	"strings"
)

type obj = map[string]interface{}

var profileEnv = [][2]string{
	{"NCCL_IB_DISABLE", "0"},
	{"NCCL_SOCKET_IFNAME", "eth0"},
	{"NCCL_IB_TIMEOUT", "22"},
	{"NCCL_IB_QPS_PER_CONNECTION", "8"},
	{"NCCL_IB_HCA", "=mlx5_1,mlx5_2,mlx5_3,mlx5_4,mlx5_5,mlx5_6,mlx5_7,mlx5_8"},
}

const (
	profileName = "roce-8card"
	selectedBy  = "gpus"
	shmName     = "rdma-webhook-shm"
	gpuResource = "nvidia.com/gpu"
	rdmaPrefix  = "rdma/"
	rdmaRes     = "rdma/hca"
)

type op struct {
	Op    string      `json:"op"`
	Path  string      `json:"path"`
	Value interface{} `json:"value,omitempty"`
}

func esc(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

func m(v interface{}) obj {
	o, _ := v.(obj)
	return o
}

func a(v interface{}) []interface{} {
	s, _ := v.([]interface{})
	return s
}

func str(v interface{}) string {
	s, _ := v.(string)
	return s
}

func isTarget(pod obj) bool {
	meta := m(pod["metadata"])
	if str(m(meta["annotations"])["rdma-webhook.io/inject"]) == "false" {
		return false
	}
	for _, r := range a(meta["ownerReferences"]) {
		ref := m(r)
		if ref["controller"] == true && str(ref["kind"]) == "PyTorchJob" {
			return true
		}
	}
	return str(m(meta["labels"])["training.kubeflow.org/operator-name"]) == "pytorchjob-controller"
}

func asksFor(c obj, pred func(string) bool) bool {
	res := m(c["resources"])
	for _, k := range []string{"limits", "requests"} {
		for name := range m(res[k]) {
			if pred(name) {
				return true
			}
		}
	}
	return false
}

func mutate(pod obj) []op {
	ops := []op{}
	spec := m(pod["spec"])
	containers := a(spec["containers"])
	var targets []int
	for i, c := range containers {
		if asksFor(m(c), func(n string) bool { return n == gpuResource || strings.HasPrefix(n, rdmaPrefix) }) {
			targets = append(targets, i)
		}
	}
	if len(targets) == 0 {
		for i, c := range containers {
			if str(m(c)["name"]) == "pytorch" {
				targets = append(targets, i)
			}
		}
	}
	if len(targets) == 0 {
		return nil
	}
	hasRdma := false
	for _, c := range containers {
		if asksFor(m(c), func(n string) bool { return strings.HasPrefix(n, rdmaPrefix) }) {
			hasRdma = true
		}
	}
	volAdded := false
	for ti, i := range targets {
		c := m(containers[i])
		base := "/spec/containers/" + itoa(i)
		// env
		have := map[string]bool{}
		for _, e := range a(c["env"]) {
			have[str(m(e)["name"])] = true
		}
		_, hasEnv := c["env"]
		for _, kv := range profileEnv {
			if have[kv[0]] {
				continue
			}
			v := obj{"name": kv[0], "value": kv[1]}
			if !hasEnv {
				ops = append(ops, op{"add", base + "/env", []interface{}{v}})
				hasEnv = true
			} else {
				ops = append(ops, op{"add", base + "/env/-", v})
			}
		}
		// IPC_LOCK
		sc := m(c["securityContext"])
		if sc == nil {
			ops = append(ops, op{"add", base + "/securityContext", obj{"capabilities": obj{"add": []string{"IPC_LOCK"}}}})
		} else if sc["privileged"] != true {
			caps := m(sc["capabilities"])
			present := false
			for _, x := range a(caps["add"]) {
				if str(x) == "IPC_LOCK" {
					present = true
				}
			}
			switch {
			case present:
			case caps == nil:
				ops = append(ops, op{"add", base + "/securityContext/capabilities", obj{"add": []string{"IPC_LOCK"}}})
			case caps["add"] == nil:
				ops = append(ops, op{"add", base + "/securityContext/capabilities/add", []string{"IPC_LOCK"}})
			default:
				ops = append(ops, op{"add", base + "/securityContext/capabilities/add/-", "IPC_LOCK"})
			}
		}
		// /dev/shm
		hasShm := false
		for _, vm := range a(c["volumeMounts"]) {
			if str(m(vm)["mountPath"]) == "/dev/shm" {
				hasShm = true
			}
		}
		if !hasShm {
			if !volAdded {
				v := obj{"name": shmName, "emptyDir": obj{"medium": "Memory"}}
				if spec["volumes"] == nil {
					ops = append(ops, op{"add", "/spec/volumes", []interface{}{v}})
				} else {
					ops = append(ops, op{"add", "/spec/volumes/-", v})
				}
				volAdded = true
			}
			vm := obj{"name": shmName, "mountPath": "/dev/shm"}
			if c["volumeMounts"] == nil {
				ops = append(ops, op{"add", base + "/volumeMounts", []interface{}{vm}})
			} else {
				ops = append(ops, op{"add", base + "/volumeMounts/-", vm})
			}
		}
		// rdma/hca on the first target
		if ti == 0 && !hasRdma {
			res := m(c["resources"])
			for _, k := range []string{"limits", "requests"} {
				switch {
				case res == nil:
					ops = append(ops, op{"add", base + "/resources", obj{k: obj{rdmaRes: "1"}}})
					res = obj{k: obj{}}
				case res[k] == nil:
					ops = append(ops, op{"add", base + "/resources/" + k, obj{rdmaRes: "1"}})
				default:
					ops = append(ops, op{"add", base + "/resources/" + k + "/" + esc(rdmaRes), "1"})
				}
			}
		}
	}
	switch str(spec["schedulerName"]) {
	case "":
		ops = append(ops, op{"add", "/spec/schedulerName", "volcano"})
	case "default-scheduler":
		ops = append(ops, op{"replace", "/spec/schedulerName", "volcano"})
	}
	// Both annotations rdma-webhook sets: the profile, and the rule that
	// chose it (the GPU count, the only rule this yardstick has).
	meta := m(pod["metadata"])
	if meta["annotations"] == nil {
		ops = append(ops, op{"add", "/metadata/annotations", obj{
			"rdma-webhook.io/injected":    profileName,
			"rdma-webhook.io/selected-by": selectedBy,
		}})
	} else {
		ops = append(ops, op{"add", "/metadata/annotations/" + esc("rdma-webhook.io/injected"), profileName})
		ops = append(ops, op{"add", "/metadata/annotations/" + esc("rdma-webhook.io/selected-by"), selectedBy})
	}
	return ops
}

func itoa(i int) string {
	if i == 0 {
		return "0"
	}
	var b [20]byte
	n := len(b)
	for ; i > 0; i /= 10 {
		n--
		b[n] = byte('0' + i%10)
	}
	return string(b[n:])
}

func handleMutate(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		http.Error(w, "use POST", http.StatusMethodNotAllowed)
		return
	}
	if !strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
		http.Error(w, "want application/json", http.StatusUnsupportedMediaType)
		return
	}
	var review obj
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 8<<20)).Decode(&review); err != nil {
		http.Error(w, "bad AdmissionReview: "+err.Error(), http.StatusBadRequest)
		return
	}
	req := m(review["request"])
	uid := str(req["uid"])
	if req == nil || uid == "" {
		http.Error(w, "AdmissionReview has no request uid", http.StatusBadRequest)
		return
	}
	resp := obj{"uid": uid, "allowed": true}
	pod := m(req["object"])
	if str(m(req["kind"])["kind"]) == "Pod" && str(req["operation"]) == "CREATE" && pod != nil && isTarget(pod) {
		if ops := mutate(pod); len(ops) > 0 {
			patch, err := json.Marshal(ops)
			if err != nil {
				http.Error(w, err.Error(), http.StatusInternalServerError)
				return
			}
			resp["patchType"] = "JSONPatch"
			resp["patch"] = patch // []byte: encoding/json writes it base64
			resp["auditAnnotations"] = obj{"profile": profileName, "selected-by": selectedBy}
		}
	}
	out, err := json.Marshal(obj{"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": resp})
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write(out)
}

func main() {
	listen := flag.String("listen", "127.0.0.1:8446", "address")
	cert := flag.String("cert", "certs/dev/tls.crt", "certificate")
	key := flag.String("key", "certs/dev/tls.key", "key")
	flag.Parse()
	mux := http.NewServeMux()
	mux.HandleFunc("/mutate", handleMutate)
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("ok\n")) })
	srv := &http.Server{
		Addr:      *listen,
		Handler:   mux,
		TLSConfig: &tls.Config{MinVersion: tls.VersionTLS12, MaxVersion: tls.VersionTLS13},
	}
	log.Fatal(srv.ListenAndServeTLS(*cert, *key))
}
