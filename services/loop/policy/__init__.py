"""Every decision the turn pipeline makes, as pure functions and tiny state holders.

The pipeline records facts (what the model asked, what each tool returned, the
clock, the token count) and asks these modules what to do; nothing here does IO.
"""
