package main
import (
 _ "github.com/spf13/cobra"
 _ "go.starlark.net/starlark"
 _ "github.com/mitchellh/hashstructure/v2"
 _ "golang.org/x/sync/errgroup"
)
func main(){}
