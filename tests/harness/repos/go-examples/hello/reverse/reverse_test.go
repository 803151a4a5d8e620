// Copyright 2024 The Example Authors. All rights reserved.
// Use of this source code is governed by a BSD-style
// license that can be found in the LICENSE file.

package reverse

import "testing"

func TestString(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"Hello, world", "dlrow ,olleH"},
		{"Hello, 世界", "界世 ,olleH"},
		{"", ""},
	} {
		if got := String(c.in); got != c.want {
			t.Errorf("String(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestInt(t *testing.T) {
	for _, c := range []struct{ in, want int }{
		{123, 321}, {-450, -54}, {0, 0},
	} {
		if got := Int(c.in); got != c.want {
			t.Errorf("Int(%d) = %d, want %d", c.in, got, c.want)
		}
	}
}
