module github.com/mirage-go/mirage

go 1.26.0

require (
	github.com/mitchellh/hashstructure/v2 v2.0.2
	github.com/spf13/cobra v1.10.2
	github.com/spf13/pflag v1.0.9
	go.starlark.net v0.0.0-20260908191801-89a6a09411d5
	go.yaml.in/yaml/v3 v3.0.6
	golang.org/x/sync v0.24.0
	golang.org/x/sys v0.42.0
)

require github.com/inconshreveable/mousetrap v1.1.0 // indirect
