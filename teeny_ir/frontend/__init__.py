"""Ways into the graph dialect: `GraphBuilder` (Python); importers later."""
