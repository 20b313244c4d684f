#!/usr/bin/env python3
"""schema_check.py SCHEMA FILE... - validate suite YAML files against the JSON Schema.

Used by tests/suite-schema.sh. YAML is read with the YAML 1.2 core schema (as
kestrel-eval reads it: `1e-5` is a number, `yes` is a string, `010` is ten),
converted to JSON data and validated with jsonschema's Draft 2020-12 validator.
Prints one line per file: "FILE<TAB>valid" or "FILE<TAB>invalid<TAB>first error".
Exit 0 when every file was checked, 2 on a usage error.
"""
import json
import re
import sys

import yaml
from jsonschema import Draft202012Validator
from jsonschema.exceptions import best_match


class Core12Loader(yaml.SafeLoader):
    """SafeLoader with the YAML 1.2 core schema's implicit types only."""


Core12Loader.yaml_implicit_resolvers = {}
for tag, regex, first in [
    ("bool", r"^(?:true|True|TRUE|false|False|FALSE)$", "tTfF"),
    ("int", r"^[-+]?[0-9]+$", "-+0123456789"),
    ("float", r"^[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?$", "-+0123456789."),
    ("null", r"^(?:~|null|Null|NULL|)$", ["~", "n", "N", ""]),
]:
    Core12Loader.add_implicit_resolver("tag:yaml.org,2002:" + tag, re.compile(regex), list(first))
Core12Loader.add_constructor("tag:yaml.org,2002:int", lambda l, n: int(l.construct_scalar(n)))
Core12Loader.add_constructor("tag:yaml.org,2002:float", lambda l, n: float(l.construct_scalar(n)))
Core12Loader.add_constructor("tag:yaml.org,2002:bool", lambda l, n: l.construct_scalar(n).lower() == "true")


def main(argv):
    if len(argv) < 3:
        print("usage: schema_check.py SCHEMA FILE...", file=sys.stderr)
        return 2
    with open(argv[1]) as f:
        schema = json.load(f)
    Draft202012Validator.check_schema(schema)
    validator = Draft202012Validator(schema)
    for path in argv[2:]:
        with open(path, "rb") as f:
            try:
                data = yaml.load(f, Loader=Core12Loader)
            except (yaml.YAMLError, UnicodeDecodeError) as e:
                print("%s\tinvalid\tnot YAML: %s" % (path, str(e).replace("\n", " ")[:200]))
                continue
        data = json.loads(json.dumps(data))  # exactly what a JSON tool would see
        error = best_match(validator.iter_errors(data))
        if error is not None:
            where = "/".join(str(p) for p in error.absolute_path) or "(top)"
            print("%s\tinvalid\t%s: %s" % (path, where, error.message.replace("\n", " ")[:200]))
        else:
            print("%s\tvalid" % path)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
