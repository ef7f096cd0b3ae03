"""The inbox: the human node (one inbox for every channel), file intake, routing, people,
catch-up watermarks, saved files, reading a channel, and the scope an agent may reach."""
