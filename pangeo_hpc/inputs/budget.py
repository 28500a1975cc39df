"""Budgets users type: dollars (``5USD``) or node-hours (``2h``), checked once.

The syntax, case-insensitive, spaces allowed between number and unit:

- dollars: ``5USD``, ``0.50 usd``, ``$5`` (needs a price per node-hour: the profile's
  ``price``);
- node time: ``2h`` (node-hours), ``90min`` (node-minutes), ``600s`` (node-seconds): the
  sum over the jobs of the time each has been running (one node per job; a local cluster
  is one node).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from pangeo_hpc.errors import InputError, named

__all__ = ["Budget", "parse_budget"]

_BUDGET = re.compile(
    r"^\s*(?:(\$)\s*)?([0-9]*\.?[0-9]+(?:e[+-]?[0-9]+)?)\s*(usd|h|min|s)?\s*$", re.IGNORECASE
)
#: node-hours per unit of node time
_HOURS = {"h": 1.0, "min": 1 / 60, "s": 1 / 3600}


@dataclass(frozen=True)
class Budget:
    """A limit on what a run may spend.

    Attributes
    ----------
    amount : float
        Dollars for ``unit="USD"``, else node-hours.
    unit : {"USD", "node-hours"}
    text : str
        As the user wrote it (``5USD``), for messages.

    Examples
    --------
    >>> b = Budget(2.0, "node-hours", "2h")
    >>> b.dollars, b.node_hours(None)
    (False, 2.0)
    """

    amount: float
    unit: str
    text: str

    @property
    def dollars(self) -> bool:
        """Whether the budget is in dollars (then it needs a price per node-hour)."""
        return self.unit == "USD"

    def node_hours(self, price: float | None) -> float:
        """The budget in node-hours at ``price`` dollars per node-hour (a node-hours
        budget: itself); a dollar budget without a price is an error naming the fix.

        Parameters
        ----------
        price : float | None
            Dollars per node-hour, or ``None``.

        Returns
        -------
        float
            Node-hours.

        Raises
        ------
        InputError
            For a dollar budget without a price.

        Examples
        --------
        >>> parse_budget("5USD").node_hours(2.5)  # $5 at $2.50 per node-hour
        2.0
        >>> parse_budget("90min").node_hours(None)
        1.5
        """
        if not self.dollars:
            return self.amount
        if not price:
            raise InputError(
                f"{named('budget', self.text)} is in dollars but the cluster has no price per "
                "node-hour: give the profile a price (pangeo-hpc.profiles.NAME.price) or a "
                "budget in node-hours, e.g. budget='2h'",
                param="budget",
            )
        return self.amount / price

    def describe(self, node_hours: float, price: float | None, high: float | None = None) -> str:
        """``$0.0123``, ``0.0041 node-hours`` or ``0.0041-0.0062 node-hours`` (up to
        ``high``): node-hours in the budget's unit.

        Parameters
        ----------
        node_hours : float
            Node-hours.
        price : float | None
            Dollars per node-hour, or ``None``.
        high : float | None, optional
            The upper end of a range, or ``None``.

        Returns
        -------
        str
            The text.

        Examples
        --------
        >>> parse_budget("2h").describe(0.00131, None, 0.00177)
        '0.00131-0.00177 node-hours'
        >>> parse_budget("5USD").describe(0.5, 3.888)
        '$1.94'
        """
        dollars = self.dollars and price
        show = (lambda h: f"{h * price:.3g}") if dollars else (lambda h: f"{h:.3g}")
        text = show(node_hours) + ("" if high is None else f"-{show(high)}")
        return f"${text}" if dollars else f"{text} node-hours"


def parse_budget(value: object, *, name: str = "budget") -> Budget:
    """A :class:`Budget` from ``5USD``, ``$5``, ``2h``, ``90min``, ``600s`` or a Budget.

    Parameters
    ----------
    value : str or Budget
        The budget.
    name : str
        The parameter that took it, for the error (the CLI shows ``--budget``).

    Returns
    -------
    Budget

    Raises
    ------
    InputError
        One line naming the value and how to write it (nothing runs).

    Examples
    --------
    >>> parse_budget("5USD").amount, parse_budget("90min").amount, parse_budget("2h").unit
    (5.0, 1.5, 'node-hours')
    """
    if isinstance(value, Budget):
        return value
    m = _BUDGET.match(value) if isinstance(value, str) else None
    unit = (m.group(3) or "").lower() if m else ""
    if m is None or bool(m.group(1)) == bool(unit):
        raise InputError(
            f"{named(name, value)} is not a budget: write dollars as 5USD or node-hours as "
            "2h (also 90min, 600s)",
            param=name if name.isidentifier() else None,
        )
    amount = float(m.group(2))
    if not (math.isfinite(amount) and amount > 0):
        raise InputError(
            f"{named(name, value)} must be above zero, e.g. 5USD or 2h",
            param=name if name.isidentifier() else None,
        )
    if m.group(1) or unit == "usd":
        return Budget(amount, "USD", value.strip())
    return Budget(amount * _HOURS[unit], "node-hours", value.strip())
