"""reidrisk.report"""
