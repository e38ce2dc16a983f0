"""Chat histories as chat histories: a message's text and shape, turns, and no message left empty by a stage.

- :mod:`docsan.chat.shape`: where a message's text sits; the cleaned text put back in the message's own shape.
- :mod:`docsan.chat.turns`: turns, the latest turn, what a server would reject in a role order.
- :mod:`docsan.chat.guard`: what happens to a message a stage took all the text from.

Reading a request is :mod:`docsan.extract.chat`, trimming it
:mod:`docsan.budget.chat_trim`; :class:`docsan.api.ChatCleaner` does all of it
for a request given as dicts (docs/chat.md).
"""
