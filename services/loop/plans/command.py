"""``/accept``: list, add, drop or clear the session's acceptance items (text + JSON)."""

from __future__ import annotations

import json

from services.loop.plans.acceptance import AcceptanceBook, AcceptanceError, parse_accept, render_items

USAGE = ('/accept lists the items; /accept "what must hold" -- <proof command> adds one; '
         "/accept drop <id> removes one; /accept clear removes the session's own")


def accept_command(book: AcceptanceBook, args: str) -> tuple[str, str]:
    """``(text, JSON)`` for one /accept line."""
    words = args.split()
    if words[:1] == ["drop"] and len(words) == 2:
        if not book.drop(words[1]):
            return f"no acceptance item {words[1]!r} of this session ({USAGE})", json.dumps({"error": "unknown_item"})
        return f"dropped {words[1]}\n{render_items(book.items())}", _listing(book)
    if words == ["clear"]:
        book.clear()
        return f"cleared\n{render_items(book.items())}", _listing(book)
    if args.strip():
        try:
            statement, command = parse_accept(args)
            item = book.add(statement, command, "user")
        except AcceptanceError as err:
            return str(err), json.dumps({"error": "bad_acceptance"})
        return (f"added {item.id}: {item.statement} -- {item.command} (checked whenever the model stops)\n"
                f"{render_items(book.items())}"), _listing(book)
    return render_items(book.items()), _listing(book)


def _listing(book: AcceptanceBook) -> str:
    return json.dumps({"items": [i.to_json() for i in book.items()]})
