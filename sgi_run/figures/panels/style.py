"""What the figure and several panel kinds share: the data area's width, the ±SE band, how an observable's
mean and a count read."""
from __future__ import annotations

import math
import re

BAND_SE = 2          # shaded band: ±2 Monte Carlo standard errors
AXES_WIDTH = 6.4     # inches of data area per panel; the legend column comes on top of it

# --- readable names ------------------------------------------------------------------------------------
# How an observable reads inside E(.) and <.>: (factor, quantity); "two_H" is 2 H, so E(two_H) = 2 E(H).
_OBSERVABLE_TEXT = {"two_H": ("2", "H"), "H_change": ("", "H(t) - H(0)"), "sin4pix": ("", "sin 4πx"),
                    "cos2pix": ("", "cos 2πx"), "v_sq": ("", "v²"), "kinetic_temperature": ("", "kinetic temperature")}


_GREEK = ("alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "kappa", "lambda", "mu", "nu", "xi",
          "pi", "rho", "sigma", "tau", "phi", "chi", "psi", "omega", "Gamma", "Delta", "Theta", "Lambda", "Pi", "Sigma",
          "Phi", "Psi", "Omega")


def symbol(name: str) -> str:
    """An observable's name as the papers write it, in mathtext: ``lambda3`` -> $\\lambda_{3}$, ``pi`` -> $\\pi$,
    ``C2_1`` -> $C_{2,1}$, ``E_prime`` -> $E'$, ``p_psi`` -> $p_{\\psi}$; a name of words stays as it is."""
    core, prime = (name[:-len("_prime")], "'") if name.endswith("_prime") else (name, "")
    match = re.fullmatch(r"([A-Za-z]+?)(\d*)(?:_([A-Za-z]+|\d+))?", core)
    letter_or_greek = lambda text: len(text) == 1 or text in _GREEK
    if not match or not letter_or_greek(match[1]) or (match[3] and not (match[3].isdigit() or letter_or_greek(match[3]))):
        return name
    math = lambda text: f"\\{text}" if text in _GREEK else text
    index = ",".join(math(part) for part in (match[2], match[3]) if part)
    return f"${math(match[1])}{'_{' + index + '}' if index else ''}{prime}$"


def mean_text(observable: str, brackets: str = "E()") -> str:
    """E(H), 2 E(H), E(sin 4πx); with ``brackets="<>"``: <H>, 2<H>."""
    factor, quantity = _OBSERVABLE_TEXT.get(observable, ("", observable))
    if brackets == "<>":
        return f"{factor}<{quantity}>"
    return f"{factor + ' ' if factor else ''}E({quantity})"


def path_text(observable: str) -> str:
    """How an observable reads along one path, where no expectation is taken: H, 2 H, C1."""
    factor, quantity = _OBSERVABLE_TEXT.get(observable, ("", observable))
    return f"{factor + ' ' if factor else ''}{quantity}"


def count_text(n) -> str:
    """10^4 as "10⁴", other counts with thousands separators: "160,000", "5000"."""
    n = int(n)
    exponent = round(math.log10(n)) if n > 0 else 0
    if n >= 1000 and 10 ** exponent == n:
        return "10" + str(exponent).translate(str.maketrans("0123456789", "⁰¹²³⁴⁵⁶⁷⁸⁹"))
    return f"{n:,}" if n >= 10000 else str(n)
