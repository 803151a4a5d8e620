module github.com/gopherguild/examples/tagwatch

go 1.23
