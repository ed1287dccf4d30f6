"""The DUR judge's labels, as data: reports count them without importing DSPy or the judge program.

Entailed and Useful are decision-useful (DUR = their share); NotUseful is not.
"""

LABELS = ("Entailed", "Useful", "NotUseful")
DECISION_USEFUL = ("Entailed", "Useful")
