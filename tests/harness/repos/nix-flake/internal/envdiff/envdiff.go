// Package envdiff compares two environments in KEY=VALUE form.
package envdiff

import (
	"fmt"
	"sort"
	"strings"
)

// Change is one difference between two environments.
type Change struct {
	Key      string
	Old, New string
	Kind     byte // '+', '-' or '~'
}

func (c Change) String() string {
	switch c.Kind {
	case '+':
		return fmt.Sprintf("+ %s=%s", c.Key, c.New)
	case '-':
		return fmt.Sprintf("- %s=%s", c.Key, c.Old)
	}
	return fmt.Sprintf("~ %s: %s -> %s", c.Key, c.Old, c.New)
}

func toMap(env []string) map[string]string {
	m := make(map[string]string, len(env))
	for _, e := range env {
		k, v, _ := strings.Cut(e, "=")
		m[k] = v
	}
	return m
}

// Compare reports how b differs from a, sorted by key.
func Compare(a, b []string) []Change {
	am, bm := toMap(a), toMap(b)
	var out []Change
	for k, av := range am {
		bv, ok := bm[k]
		switch {
		case !ok:
			out = append(out, Change{Key: k, Old: av, Kind: '-'})
		case av != bv:
			out = append(out, Change{Key: k, Old: av, New: bv, Kind: '~'})
		}
	}
	for k, bv := range bm {
		if _, ok := am[k]; !ok {
			out = append(out, Change{Key: k, New: bv, Kind: '+'})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out
}
