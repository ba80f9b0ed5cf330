package main

import (
	"bufio"
	"bytes"
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// The apiserver's admission histograms the report reads (k8s.io/apiserver
// pkg/admission/metrics and plugin/policy/mutating/metrics). Their buckets
// start at 5 ms (0.5 us for the policy's), too coarse for the sub-millisecond
// differences measured here, so the report uses count and sum (the mean).
var admissionFamilies = []string{
	"apiserver_admission_webhook_admission_duration_seconds",
	"apiserver_admission_step_admission_duration_seconds",
	"apiserver_admission_controller_admission_duration_seconds",
	"apiserver_mutating_admission_policy_check_duration_seconds",
}

// Series is one histogram (a family and its labels but le) at one moment,
// or the difference of two.
type Series struct {
	Count   float64            `json:"count"`
	Sum     float64            `json:"sum"`
	Buckets map[string]float64 `json:"buckets,omitempty"`
}

func scrapeAdmission(c *apiClient) (map[string]Series, error) {
	code, data, _, err := c.do("GET", "/metrics", nil)
	if err != nil {
		return nil, err
	}
	if code != 200 {
		return nil, fmt.Errorf("GET /metrics: %d %s", code, firstLine(data))
	}
	return parseHistograms(data, admissionFamilies)
}

// parseHistograms reads the Prometheus text format's _bucket, _sum and
// _count lines of the given families, keyed "family{labels without le}".
func parseHistograms(data []byte, families []string) (map[string]Series, error) {
	out := map[string]Series{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		fam, suffix := matchFamily(line, families)
		if fam == "" {
			continue
		}
		labels, value, err := splitSample(line[len(fam)+len(suffix):])
		if err != nil {
			return nil, fmt.Errorf("%q: %v", line, err)
		}
		le := ""
		var keep []string
		for _, l := range labels {
			if strings.HasPrefix(l, "le=") {
				le = strings.Trim(l[3:], `"`)
				continue
			}
			keep = append(keep, l)
		}
		sort.Strings(keep)
		key := fam + "{" + strings.Join(keep, ",") + "}"
		s := out[key]
		switch suffix {
		case "_sum":
			s.Sum = value
		case "_count":
			s.Count = value
		case "_bucket":
			if s.Buckets == nil {
				s.Buckets = map[string]float64{}
			}
			s.Buckets[le] = value
		}
		out[key] = s
	}
	return out, sc.Err()
}

func matchFamily(line string, families []string) (string, string) {
	for _, f := range families {
		if !strings.HasPrefix(line, f) {
			continue
		}
		for _, suf := range []string{"_bucket", "_sum", "_count"} {
			rest := line[len(f):]
			if strings.HasPrefix(rest, suf+"{") || strings.HasPrefix(rest, suf+" ") {
				return f, suf
			}
		}
	}
	return "", ""
}

// splitSample parses `{a="x",b="y"} 1.5` into its labels and value.
func splitSample(s string) ([]string, float64, error) {
	var labels []string
	if strings.HasPrefix(s, "{") {
		end, inq, start := -1, false, 1
		for i := 1; i < len(s) && end < 0; i++ {
			switch {
			case s[i] == '\\' && inq:
				i++
			case s[i] == '"':
				inq = !inq
			case s[i] == ',' && !inq:
				labels = append(labels, s[start:i])
				start = i + 1
			case s[i] == '}' && !inq:
				if i > start {
					labels = append(labels, s[start:i])
				}
				end = i
			}
		}
		if end < 0 {
			return nil, 0, fmt.Errorf("unterminated labels")
		}
		s = s[end+1:]
	}
	f := strings.Fields(s)
	if len(f) < 1 {
		return nil, 0, fmt.Errorf("no value")
	}
	v, err := strconv.ParseFloat(f[0], 64)
	return labels, v, err
}

// diffSeries keeps the series that moved between two scrapes.
func diffSeries(before, after map[string]Series) map[string]Series {
	out := map[string]Series{}
	for k, a := range after {
		b := before[k]
		if a.Count-b.Count <= 0 {
			continue
		}
		d := Series{Count: a.Count - b.Count, Sum: a.Sum - b.Sum}
		if a.Buckets != nil {
			d.Buckets = map[string]float64{}
			for le, v := range a.Buckets {
				d.Buckets[le] = v - b.Buckets[le]
			}
		}
		out[k] = d
	}
	return out
}
