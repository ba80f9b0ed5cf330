package e2e

import "strconv"

// trainingPod is a PyTorchJob master pod as training-operator v1.9 creates
// it, with the given number of GPUs and nothing RDMA-related.
func trainingPod(gpus int) obj {
	n := strconv.Itoa(gpus)
	return obj{
		"apiVersion": "v1",
		"kind":       "Pod",
		"metadata": obj{
			"name":      "e2e-job-master-0",
			"namespace": "kubeflow",
			"labels": obj{
				"training.kubeflow.org/job-name":      "e2e-job",
				"training.kubeflow.org/job-role":      "master",
				"training.kubeflow.org/operator-name": "pytorchjob-controller",
				"training.kubeflow.org/replica-index": "0",
				"training.kubeflow.org/replica-type":  "master",
			},
			"ownerReferences": []interface{}{obj{
				"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "name": "e2e-job",
				"uid": "0b1c7a52-9d1e-4c55-8a0c-6f2b3c7d9e01", "controller": true, "blockOwnerDeletion": true,
			}},
		},
		"spec": obj{
			"containers": []interface{}{obj{
				"name":  "pytorch",
				"image": "pytorch/pytorch:2.3.0-cuda12.1-cudnn8-runtime",
				"env":   []interface{}{obj{"name": "WORLD_SIZE", "value": "2"}},
				"resources": obj{
					"limits":   obj{"nvidia.com/gpu": n},
					"requests": obj{"nvidia.com/gpu": n},
				},
				"terminationMessagePath":   "/dev/termination-log",
				"terminationMessagePolicy": "File",
				"imagePullPolicy":          "IfNotPresent",
			}},
			"restartPolicy":      "OnFailure",
			"dnsPolicy":          "ClusterFirst",
			"serviceAccountName": "default",
			"securityContext":    obj{},
			"schedulerName":      "default-scheduler",
			"priority":           0,
			"enableServiceLinks": true,
		},
		"status": obj{},
	}
}

// configMap is a ConfigMap that carries the target labels and annotation,
// which must not make it a target.
func configMap() obj {
	return obj{
		"apiVersion": "v1",
		"kind":       "ConfigMap",
		"metadata": obj{
			"name":        "e2e-config",
			"namespace":   "kubeflow",
			"labels":      obj{"training.kubeflow.org/operator-name": "pytorchjob-controller"},
			"annotations": obj{"rdma-webhook.io/inject": "true"},
		},
		"data": obj{"NCCL_DEBUG": "INFO"},
	}
}
