"""Campaigns: the plan read from a campaign file, its run into one folder, and its report."""
