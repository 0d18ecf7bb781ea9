"""Routes, one module per area. Each route: authenticate, parse, one facade call, render."""
