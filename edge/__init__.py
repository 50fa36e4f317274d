"""What faces the network besides Django's views: the ASGI application in front of the
site (``asgi``), online play's per-move endpoints (``gateway``), live watching (``live``),
a person's seat driven by their browser (``human``), the nginx configuration
(``nginx``), and the command that serves them all (``manage.py run_gateway``)."""
