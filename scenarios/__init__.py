"""Scenario files: named, documented schedules with expected outcomes (package data)."""
