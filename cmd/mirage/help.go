package main

import (
	"embed"
	"fmt"
	"strings"

	"github.com/mirage-go/mirage/driver"
	"github.com/mirage-go/mirage/frontend"
)

// The commands' long help is text, in help/NAME.txt, read as a user
// reads it; {{...}} marks what the code knows best: the shared paragraphs
// (dynamic rows, a program's bounds) and values such as the presets.
//
//go:embed help/*.txt
var helpFiles embed.FS

// help returns help/NAME.txt with its placeholders filled.
func help(name string) string {
	return helpVars().Replace(helpFile(name))
}

func helpFile(name string) string {
	data, err := helpFiles.ReadFile("help/" + name + ".txt")
	if err != nil {
		panic(err) // a command without its help file: every test of the command line fails
	}
	return string(data)
}

func helpVars() *strings.Replacer {
	bounds := strings.NewReplacer(
		"{{max_source_mib}}", fmt.Sprint(frontend.MaxSourceSize>>20),
		"{{max_steps}}", fmt.Sprint(frontend.DefaultMaxSteps),
		"{{max_alloc_mib}}", fmt.Sprint(frontend.DefaultMaxAlloc>>20),
	).Replace(helpFile("bounds"))
	return strings.NewReplacer(
		"{{dynamic}}", helpFile("dynamic"),
		"{{bounds}}", bounds,
		"{{presets}}", strings.Join(driver.PresetNames(), ", "),
		"{{time_limit}}", driver.DefaultTimeLimit.String(),
	)
}
