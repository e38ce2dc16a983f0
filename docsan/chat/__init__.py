"""Chat histories as chat histories: their turn structure, and no message left empty by a stage.

- :mod:`docsan.chat.turns`: turns, the latest turn, what a server would reject in a role order.
- :mod:`docsan.chat.guard`: what happens to a message a stage took all the text from.

Reading a request is :mod:`docsan.extract.chat`, writing it back
:func:`docsan.render.render_chat`, trimming it :mod:`docsan.budget.chat`;
:func:`docsan.api.clean_chat` does all of it for a request given as dicts.
"""
