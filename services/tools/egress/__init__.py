"""The sandbox's egress proxy: the only way out of a ``tools.sandbox.network: proxy`` sandbox.

- ``wire``: pure parsing of a proxy request head and of a TLS ClientHello (SNI);
- ``rules``: the user's allow/deny lists, credential rules and the address policy, decided per request;
- ``proxy``: the asyncio proxy (one Unix socket per command, bounded, recorded);
- ``grants``: the user's "allow once / for this session" for hosts the lists do not name;
- ``forwarder``: what runs inside the sandbox to expose that socket as 127.0.0.1:PORT.

See docs/security.md ("Network egress") for the threats and the tests that prove each row.
"""
