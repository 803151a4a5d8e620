// Copyright 2024 The Example Authors. All rights reserved.
// Use of this source code is governed by a BSD-style
// license that can be found in the LICENSE file.

// Package reverse reverses strings rune by rune.
package reverse

// String returns s with its runes in reverse order.
func String(s string) string {
	r := []rune(s)
	for i, j := 0, len(r)-1; i < j; i, j = i+1, j-1 {
		r[i], r[j] = r[j], r[i]
	}
	return string(r)
}

// Int returns the decimal digits of i in reverse order, keeping the sign.
func Int(i int) int {
	neg := i < 0
	if neg {
		i = -i
	}
	out := 0
	for ; i > 0; i /= 10 {
		out = out*10 + i%10
	}
	if neg {
		return -out
	}
	return out
}
