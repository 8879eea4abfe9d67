"""The HTML report (`ladder report --html`, `site`) and its live server (`ladder view`, `serve`)."""
