// Copyright 2024 The Example Authors. All rights reserved.
// Use of this source code is governed by a BSD-style
// license that can be found in the LICENSE file.

// Package textwrap wraps plain text to a fixed width.
//
// It is a library-only example: there is no main package in this module.
// It shows package documentation, table-driven tests, benchmarks and
// runnable examples.
package textwrap

import (
	"strings"
	"unicode/utf8"
)

// Wrap breaks s into lines no wider than width runes, splitting on spaces.
// Words longer than width are left on a line of their own.
func Wrap(s string, width int) []string {
	if width <= 0 {
		return []string{s}
	}
	var lines []string
	var cur strings.Builder
	n := 0
	for _, w := range strings.Fields(s) {
		wl := utf8.RuneCountInString(w)
		if n > 0 && n+1+wl > width {
			lines = append(lines, cur.String())
			cur.Reset()
			n = 0
		}
		if n > 0 {
			cur.WriteByte(' ')
			n++
		}
		cur.WriteString(w)
		n += wl
	}
	if n > 0 {
		lines = append(lines, cur.String())
	}
	return lines
}

// Indent prefixes every line of s with prefix.
func Indent(s, prefix string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		if l != "" {
			lines[i] = prefix + l
		}
	}
	return strings.Join(lines, "\n")
}
