"""The website's pages: thin views that check access, make one call, and render."""
