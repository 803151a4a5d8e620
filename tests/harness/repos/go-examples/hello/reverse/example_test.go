// Copyright 2024 The Example Authors. All rights reserved.
// Use of this source code is governed by a BSD-style
// license that can be found in the LICENSE file.

package reverse_test

import (
	"fmt"

	"github.com/gopherguild/examples/hello/reverse"
)

func ExampleString() {
	fmt.Println(reverse.String("stressed"))
	// Output: desserts
}
