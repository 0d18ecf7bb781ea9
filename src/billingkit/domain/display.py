"""How records show themselves in notebooks and terminals, without the domain drawing anything.

:class:`Displayed` gives a class a compact one-line ``repr()``, a text rendering for terminals
(``str()``, ``print()``, :meth:`Displayed.show`) and an HTML rendering for Jupyter
(``_repr_html_``). The drawing lives in :mod:`billingkit.display`, outside the pure domain,
imported when one of these is first called (as ``Invoice.to_pdf`` imports its renderer).
"""

from __future__ import annotations

__all__ = ["Displayed"]


class Displayed:
    """Mixin: ``repr()`` is one line, ``str()`` a text table, ``_repr_html_()`` an HTML table."""

    __slots__ = ()

    def __repr__(self) -> str:
        # Imported when called: the renderers live outside the domain (see the module doc).
        from billingkit.display import summary

        return summary(self)

    def __str__(self) -> str:
        from billingkit.display import to_text

        return to_text(self)

    def _repr_html_(self) -> str:
        """Jupyter's rich display hook: the HTML rendering, every value escaped."""
        from billingkit.display import to_html

        return to_html(self)

    def to_text(self) -> str:
        """The terminal rendering (what ``str()`` and :meth:`show` give): plain-text tables."""
        return str(self)

    def show(self) -> None:
        """Print the terminal rendering."""
        print(self.to_text())
