module github.com/gopherguild/examples/textwrap

go 1.23
