"""Oracle helper: parse HOCON files with pyhocon and print them as JSON.

Usage: python3 pyhocon_oracle.py FILE...
Prints one JSON line per file: {"ok": <value>} or {"error": "<message>"}.
Exit code 3 if pyhocon is not installed.
"""
import json
import sys
from collections import OrderedDict

try:
    from pyhocon import ConfigFactory
    from pyhocon.config_tree import ConfigTree, NoneValue, ConfigValues
except ImportError:
    sys.exit(3)


def plain(v):
    if isinstance(v, ConfigTree):
        return OrderedDict((k.strip('"'), plain(x)) for k, x in v.items())
    if isinstance(v, list):
        return [plain(e) for e in v]
    if v is None or isinstance(v, NoneValue):
        return None
    if isinstance(v, ConfigValues):
        raise ValueError("unresolved value")
    if isinstance(v, (str, int, float, bool)):
        return v
    return str(v)


for path in sys.argv[1:]:
    try:
        line = {"ok": plain(ConfigFactory.parse_file(path))}
    except Exception as e:  # noqa: BLE001 - any pyhocon failure is reported
        line = {"error": f"{type(e).__name__}: {e}"}
    print(json.dumps(line, ensure_ascii=False), flush=True)
