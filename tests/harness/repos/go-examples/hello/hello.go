// Copyright 2024 The Example Authors. All rights reserved.
// Use of this source code is governed by a BSD-style
// license that can be found in the LICENSE file.

// Hello greets someone from the command line.
//
// Usage:
//
//	hello [-g greeting] [-r] [name]
//
// With no name it greets the world. With -r both the greeting and the name
// are printed backwards.
package main

import (
	"flag"
	"fmt"
	"log"
	"os"

	"github.com/gopherguild/examples/hello/reverse"
)

var (
	greeting = flag.String("g", "Hello", "greet with `greeting`")
	backward = flag.Bool("r", false, "print the greeting in reverse")
)

func usage() {
	fmt.Fprintf(os.Stderr, "usage: hello [options] [name]\n")
	flag.PrintDefaults()
	os.Exit(2)
}

func main() {
	log.SetFlags(0)
	log.SetPrefix("hello: ")
	flag.Usage = usage
	flag.Parse()

	name := "world"
	switch args := flag.Args(); len(args) {
	case 0:
	case 1:
		name = args[0]
	default:
		usage()
	}
	if name == "" {
		log.Fatalf("empty name")
	}

	msg := fmt.Sprintf("%s, %s!", *greeting, name)
	if *backward {
		msg = reverse.String(msg)
	}
	fmt.Println(msg)
}
