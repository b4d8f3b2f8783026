package main

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/pflag"
)

// flagError rewrites the error of a flag value that does not parse
// without Go's package names: `invalid argument "many" for "--limit" flag:
// want a whole number`. Other errors pass through.
func flagError(err error) error {
	var ive *pflag.InvalidValueError
	if !errors.As(err, &ive) {
		return err
	}
	f := ive.GetFlag()
	return fmt.Errorf("invalid argument %s for \"--%s\" flag: %s", quoteShort(ive.GetValue()), f.Name, wantValue(f.Value.Type(), ive.Unwrap()))
}

// wantValue says what a flag of type typ takes, after cause refused a value.
func wantValue(typ string, cause error) string {
	switch {
	case strings.HasPrefix(typ, "int") || strings.HasPrefix(typ, "uint"):
		if errors.Is(cause, strconv.ErrRange) {
			return "the number is out of range"
		}
		return "want a whole number"
	case strings.HasPrefix(typ, "float"):
		return "want a number"
	case typ == "bool":
		return "want true or false"
	case typ == "duration":
		return "want a duration such as 30s, 5m or 1h"
	}
	return "not a valid " + typ
}
