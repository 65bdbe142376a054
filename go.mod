module github.com/gpuwatt/gpuwatt

go 1.26.0

require (
	github.com/ebitengine/purego v0.11.3
	go.yaml.in/yaml/v2 v2.4.4
	golang.org/x/crypto v0.57.0
	google.golang.org/protobuf v1.36.12
)
