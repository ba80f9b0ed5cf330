package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"reflect"
)

// obj is a decoded JSON object.
type obj = map[string]interface{}

// decodeJSON decodes data with numbers kept as json.Number so that values
// compare exactly as written.
func decodeJSON(data []byte) (interface{}, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v interface{}
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, fmt.Errorf("trailing data after the JSON value")
	}
	return v, nil
}

// decodeObject decodes data that must hold a JSON object.
func decodeObject(data []byte) (obj, error) {
	v, err := decodeJSON(data)
	if err != nil {
		return nil, err
	}
	o, ok := v.(obj)
	if !ok {
		return nil, fmt.Errorf("expected a JSON object, got %T", v)
	}
	return o, nil
}

func readJSONFile(path string) (obj, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	o, err := decodeObject(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	return o, nil
}

func mustMarshal(v interface{}) []byte {
	data, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return data
}

// deepCopy returns an independent copy of a decoded JSON value.
func deepCopy(v interface{}) interface{} {
	out, err := decodeJSON(mustMarshal(v))
	if err != nil {
		panic(err)
	}
	return out
}

func copyObject(o obj) obj {
	return deepCopy(o).(obj)
}

// jsonEqual compares two decoded JSON values semantically (numbers by text).
func jsonEqual(a, b interface{}) bool {
	return reflect.DeepEqual(normalize(a), normalize(b))
}

func normalize(v interface{}) interface{} {
	out, err := decodeJSON(mustMarshal(v))
	if err != nil {
		panic(err)
	}
	return out
}

// compact renders a value for failure messages, cut to a readable length.
func compact(v interface{}) string {
	s := string(mustMarshal(v))
	if len(s) > 600 {
		return s[:600] + "...(cut)"
	}
	return s
}

// path walks nested objects by key; nil when any step is missing.
func path(v interface{}, keys ...string) interface{} {
	for _, k := range keys {
		o, ok := v.(obj)
		if !ok {
			return nil
		}
		v = o[k]
	}
	return v
}

func pathObj(v interface{}, keys ...string) obj {
	o, _ := path(v, keys...).(obj)
	return o
}

func pathArr(v interface{}, keys ...string) []interface{} {
	a, _ := path(v, keys...).([]interface{})
	return a
}

func pathStr(v interface{}, keys ...string) (string, bool) {
	s, ok := path(v, keys...).(string)
	return s, ok
}

// scalarString renders a quantity-like scalar (string or number) as text.
func scalarString(v interface{}) (string, bool) {
	switch x := v.(type) {
	case string:
		return x, true
	case json.Number:
		return x.String(), true
	case float64:
		return fmt.Sprint(x), true
	}
	return "", false
}
