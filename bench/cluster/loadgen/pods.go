package main

import (
	"encoding/json"
	"fmt"
	"os"
)

type obj = map[string]interface{}

func readObject(path string) (obj, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var o obj
	if err := json.Unmarshal(data, &o); err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	return o, nil
}

// podWithName is the pod file's object as JSON with metadata.name set.
func podWithName(pod obj, name string) ([]byte, error) {
	meta, _ := pod["metadata"].(obj)
	if meta == nil {
		return nil, fmt.Errorf("the pod has no metadata")
	}
	meta["name"] = name
	return json.Marshal(pod)
}

// isMutated says whether a stored pod carries the profile's mutation: the
// scheduler name and NCCL_IB_HCA in some container. Every configuration
// measured applies both, so this tells a pod that went through the mutation
// from one that did not, whatever did it.
func isMutated(pod obj) bool {
	spec, _ := pod["spec"].(obj)
	if spec == nil || spec["schedulerName"] != "volcano" {
		return false
	}
	cs, _ := spec["containers"].([]interface{})
	for _, c := range cs {
		env, _ := c.(obj)["env"].([]interface{})
		for _, e := range env {
			if m, _ := e.(obj); m != nil && m["name"] == "NCCL_IB_HCA" {
				return true
			}
		}
	}
	return false
}

func podPath(ns string) string {
	return "/api/v1/namespaces/" + ns + "/pods"
}
