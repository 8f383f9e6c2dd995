"""One module per tab of the app; ``widgets.app`` composes them."""
