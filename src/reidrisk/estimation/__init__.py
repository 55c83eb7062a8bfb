"""reidrisk.estimation"""
