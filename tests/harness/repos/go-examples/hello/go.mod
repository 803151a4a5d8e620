module github.com/gopherguild/examples/hello

go 1.23
