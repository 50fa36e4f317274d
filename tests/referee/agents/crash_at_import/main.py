raise ImportError("this agent needs a module that is not installed: tensorflow")
