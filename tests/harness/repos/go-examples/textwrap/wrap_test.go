// Copyright 2024 The Example Authors. All rights reserved.
// Use of this source code is governed by a BSD-style
// license that can be found in the LICENSE file.

package textwrap

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
)

func TestWrap(t *testing.T) {
	tests := []struct {
		in    string
		width int
		want  []string
	}{
		{"", 10, nil},
		{"one two three", 7, []string{"one two", "three"}},
		{"supercalifragilistic is long", 5, []string{"supercalifragilistic", "is", "long"}},
		{"naïve café au lait", 10, []string{"naïve café", "au lait"}},
	}
	for _, tt := range tests {
		if got := Wrap(tt.in, tt.width); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("Wrap(%q, %d) = %q, want %q", tt.in, tt.width, got, tt.want)
		}
	}
}

func BenchmarkWrap(b *testing.B) {
	text := strings.Repeat("the quick brown fox jumps over the lazy dog ", 200)
	for i := 0; i < b.N; i++ {
		Wrap(text, 72)
	}
}

func ExampleWrap() {
	for _, line := range Wrap("It was the best of times, it was the worst of times", 20) {
		fmt.Println(line)
	}
	// Output:
	// It was the best of
	// times, it was the
	// worst of times
}
