"""The NPU chips a manifest may name (a CANN release's catalog lists which of them it is released for)."""

CHIPS = ("910b", "910", "310p", "a3", "950")
