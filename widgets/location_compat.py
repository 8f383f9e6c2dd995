"""Panel 1.9 cannot read an IPv6 ``Host`` (``[::1]:5006``): its location reader splits the host on
``:`` and a bracketed literal has several, so every page opened at ``http://[::1]:PORT/`` answered
500 ("too many values to unpack") and ``workbench app --address ::1`` was unusable in a browser.

``patch_location_reader`` wraps ``panel.io.location._get_location_params`` once: a bracketed host is
read with Tornado's own host/port split, everything else goes to Panel's function unchanged. The
wrapper is a no-op for hosts Panel reads itself, so a Panel that fixes this keeps working; the
test ``tests/test_host_guard.py::test_an_ipv6_host_is_served`` shows when it is still needed.
"""
from __future__ import annotations

from tornado.httputil import split_host_and_port


def patch_location_reader() -> None:
    from panel.io import location

    original = location._get_location_params
    if getattr(original, "_workbench_ipv6", False):
        return

    def read(protocol, host, uri):
        if host and host.startswith("[") and "]" in host:
            params = original(protocol, None, uri)
            name, port = split_host_and_port(host)  # "[::1]:5006" -> ("[::1]", 5006)
            params["hostname"] = name if name.startswith("[") else f"[{name}]"
            params["port"] = str(port) if port is not None else ""
            prefix = params.get("protocol", "")
            params["href"] = f"{prefix}//{host}" + (params.get("href", "")[len(prefix):])
            return params
        return original(protocol, host, uri)

    read._workbench_ipv6 = True
    location._get_location_params = read
