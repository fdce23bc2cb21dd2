"""The course reports' own questions: their claims checked against PyTorch, the cost of attention
(course report 003) and attention as selection and averaging (course report 004)."""
